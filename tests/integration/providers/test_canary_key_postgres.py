"""A canary API key never lands in a PostgreSQL store either.

A run through the real CLI against a loopback OpenAI-compatible fake (one that also
answers a 401 echoing the key), with the store on a real PostgreSQL server; then every
row of every table of the store's schema is read back as text and searched for the key,
its first 12 characters and its base64 forms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.fakes.vendor_server import (
    EchoKey401,
    FakeVendorServer,
    RecordedRequest,
    Reply,
    Turn,
    tool_results_in,
)
from tests.integration.providers.conftest import (
    CANARY_KEY,
    Cli,
    echo_call,
    finished,
    provider_toml,
    write_workspace,
)
from tests.integration.providers.test_canary_key import _forms


@dataclass
class PgCli(Cli):
    """The providers' CLI runner, with its store on PostgreSQL."""

    url: str = ""

    def env(self) -> dict[str, str]:
        return {**super().env(), "IO_STORE": self.url}


def test_canary_key_reaches_no_row_of_a_postgresql_store(
        fakes: Callable[..., FakeVendorServer], tmp_path: Path, postgres_url: str) -> None:
    (tmp_path / "tmp").mkdir()
    cli = PgCli(store=tmp_path / "unused.db", tmpdir=tmp_path / "tmp", url=postgres_url)
    answers = {"count": 0}

    def script(request: RecordedRequest) -> Reply:
        answers["count"] += 1
        if answers["count"] == 3:
            return EchoKey401()
        if tool_results_in(request) == 0:
            return Turn(text="step", tool_calls=(echo_call(0),), pieces=2)
        return Turn(text="done", pieces=2)

    fake = fakes("openai", responder=script)
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake, max_retries=1))
    ok = cli("run", "inspect", "-w", str(ws), "--json")
    assert ok.returncode == 0, ok.stderr
    denied = cli("run", "again", "-w", str(ws), "--json")
    assert denied.returncode == 1 and "401" in finished(denied.stdout)["reason"]
    schema = postgres_url.rsplit("%3D", 1)[1]
    dump: list[str] = []
    with psycopg.connect(postgres_url.split("?")[0], autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,)).fetchall()]
        assert "runs" in tables and "completions" in tables
        for table in tables:
            rows = conn.execute(f"SELECT row_to_json(t)::text FROM {schema}.{table} t").fetchall()
            dump += [r[0] for r in rows]
    blob = "\n".join(dump).encode()
    assert b"inspect" in blob  # the dump really holds the runs
    hits = [form for form, needle in _forms(CANARY_KEY).items() if needle in blob]
    assert hits == [], f"the key reached the store: {hits}"

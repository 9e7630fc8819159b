"""Shared fixtures: an isolated environment for every test (no real user config, no real
store), and helpers to run the real `io` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


# Modules whose every test also runs with the store on PostgreSQL (the same CLI-level
# contract on both backends); see `store_backend`.
BOTH_BACKENDS = (
    "tests/integration/cli/test_run_cli.py",
    "tests/integration/session/",
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    path = Path(str(metafunc.definition.fspath)).relative_to(REPO).as_posix()
    if "store_backend" in metafunc.fixturenames and path.startswith(BOTH_BACKENDS):
        metafunc.parametrize("store_backend", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def store_backend(request: pytest.FixtureRequest) -> str:
    """Which store the test's `io` commands use: "sqlite" unless parametrized."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture(autouse=True)
def default_sigint() -> Iterator[None]:
    """Every test starts with SIGINT as a fresh interpreter has it: handled (Python's
    KeyboardInterrupt) and not blocked. A child inherits an ignored or blocked SIGINT, so
    a library that left the worker so (in CI's full run some test did; the culprit is not
    pinned down) would make every later `io` child deaf to Ctrl-C."""
    import signal

    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    # Unconditionally: a C extension can set SIG_IGN behind Python's back, where
    # `signal.getsignal` still reports Python's handler; `signal.signal` is a real
    # sigaction either way.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                 store_backend: str, request: pytest.FixtureRequest) -> Iterator[Path]:
    """Point every scope and the store at a private temp dir for this test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("IO_SYSTEM_CONFIG", str(home / "system" / "io.toml"))
    monkeypatch.setenv("IO_STORE", str(home / "state" / "io" / "state.db"))
    if store_backend == "postgresql":
        monkeypatch.setenv("IO_STORE", request.getfixturevalue("postgres_url"))
    # A private temp dir, here and in every child: the sandbox ledger folder lives there
    # (`$TMPDIR/io-ledger-UID`), so residue a test's killed `io` leaves is swept by that
    # test's next `io`, never by another test's (whose stderr would then say so).
    tmp = home / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        monkeypatch.delenv(name)  # the operator's telemetry settings must not export test runs
    yield home


def io_cmd() -> list[str]:
    """The `io` console script of this interpreter (falls back to `python -m`)."""
    return [sys.executable, "-m", "io_harness_cli"]


def run_io(args: Sequence[str], *, cwd: Path | None = None, input: str | None = None,
           env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `io ARGS` to completion and capture its output."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([*io_cmd(), *args], cwd=cwd, input=input, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL store URL on a fresh, private schema of the test server.

    The server is a real one on loopback, started by `.ci/run` (role and database from
    `IO_TEST_POSTGRES_URL`). Without it the test is skipped, unless
    `IO_REQUIRE_POSTGRES=1` (CI) turns the skip into a failure.
    """
    base = os.environ.get("IO_TEST_POSTGRES_URL")
    if not base:
        if os.environ.get("IO_REQUIRE_POSTGRES") == "1":
            pytest.fail("IO_REQUIRE_POSTGRES=1 but IO_TEST_POSTGRES_URL is not set")
        pytest.skip("no PostgreSQL test server (set IO_TEST_POSTGRES_URL)")
    import uuid

    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")

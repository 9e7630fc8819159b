"""docs/CONTRACT.md, "Configuration": secrets resolved from the config (`${env:…}` and
`${file:…}` in the provider key and an MCP server's `env`) never reach the store, the
trace, the events or an error message. Real `io` runs; the raw bytes of the database
and its log are searched."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

ENV_SECRET = "canary-env-7d1f0c2e9b"
FILE_SECRET = "canary-file-4a8e6b3d21"

CONFIG = f"""
[[mcp]]
name = "tools"
command = "{sys.executable}"
args = ["-c", "pass"]
env = {{ TOKEN = "${{file:token.txt}}", OTHER = "${{env:IO_TEST_CANARY}}" }}
optional = true
"""


def test_config_secrets_reach_no_store_trace_event_or_error(
        tmp_path: Path, isolated_env: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("look", ("read_file", {"path": "missing.txt"})),
        replay_line("done"),
    ], toml_extra='[policy]\ndeny_exec = ["*python*"]\n', files={"token.txt": FILE_SECRET})
    toml = (ws / "io.toml").read_text().replace(
        '[provider]\n', '[provider]\napi_key = "${env:IO_TEST_CANARY}"\n', 1)
    (ws / "io.toml").write_text(toml + CONFIG)
    env = {"IO_TEST_CANARY": ENV_SECRET}
    outputs = []
    run = run_io(["run", "goal", "-w", str(ws), "--json"], env=env)
    assert run.returncode == 0, run.stderr
    run_id = str(json_lines(run.stdout)[-1]["run_id"])
    outputs.append(run.stdout + run.stderr)
    for args in (["trace", run_id, "--json"], ["runs", "--json"], ["config", "show"],
                 ["config", "show", "--toml"], ["spend", "--json"]):
        done = run_io([*args, "-w", str(ws)], env=env)
        assert done.returncode == 0, (args, done.stderr)
        outputs.append(done.stdout + done.stderr)
    # a configuration error must not echo the secret either
    (ws / "io.local.toml").write_text('[provider]\nmax_retries = "${env:IO_TEST_CANARY}"\n')
    bad = run_io(["run", "goal", "-w", str(ws)], env=env)
    assert bad.returncode == 2
    outputs.append(bad.stdout + bad.stderr)
    stored = b"".join(p.read_bytes() for p in (isolated_env / "state" / "io").glob("state.db*"))
    assert stored, "no store was written"
    for secret in (ENV_SECRET, FILE_SECRET):
        assert secret.encode() not in stored
        assert all(secret not in text for text in outputs), secret
    assert "***" in outputs[3]  # `config show` redacts, so the keys were read


def test_every_read_only_command_the_page_names_runs_without_the_provider_key(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    first = run_io(["run", "go", "-w", str(ws), "--json"])
    assert first.returncode == 0, first.stderr
    run_id = str(json_lines(first.stdout)[-1]["run_id"])
    (ws / "io.toml").write_text(
        '[provider]\nkind = "openai"\nmodel = "m"\napi_key = "${env:IO_TEST_UNSET_KEY}"\n')
    session = run_io(["session", "new", "-w", str(ws), "--json"])
    assert session.returncode == 0, session.stderr
    session_id = str(json_lines(session.stdout)[-1].get("session_id")
                     or json_lines(session.stdout)[-1].get("id"))
    for argv in (["session", "show", session_id], ["session", "list"],
                 ["runs"], ["trace", run_id], ["spend"]):
        result = run_io([*argv, "-w", str(ws)])
        assert result.returncode == 0, (argv, result.stderr)
        assert "IO_TEST_UNSET_KEY" not in result.stderr
    # The run has finished: steer and interrupt refuse it (exit 2, #23), and say why,
    # which is the run's state, never the provider key.
    for argv in (["steer", run_id, "look again"], ["interrupt", run_id]):
        result = run_io([*argv, "-w", str(ws)])
        assert result.returncode == 2 and "has ended" in result.stderr, (argv, result.stderr)
        assert "IO_TEST_UNSET_KEY" not in result.stderr
    run = run_io(["run", "go", "-w", str(ws)])
    assert run.returncode == 2 and "IO_TEST_UNSET_KEY" in run.stderr

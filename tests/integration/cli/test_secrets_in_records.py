"""No secret value reaches a record (#22), under the floor and off backends.

The config loads two secrets: a provider key from the environment
(`ANTHROPIC_API_KEY`) and a deploy token through `${file:PATH}` (a file outside the
workspace that an unconfined command can read). The scripted run has a command print
the token file and every ancestor's environment (where io's own environment holds the
provider key), and the "model" repeats both values. Neither value may appear in the raw
bytes of the SQLite store (and its WAL), in `io run --json`, in `io trace --json`, in
`io tool --json`, or on stderr. Controls: the redaction marker is where the values
were, and ordinary output passes unchanged. On main at 65e3665 the model's text and the
token file's contents were recorded as they were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_io
from tests.integration.cli.helpers import replay_line

PROVIDER_KEY = "sk-ant-test-0123456789abcdef-provider"
DEPLOY_TOKEN = "deploy-token-9876543210-from-a-file"
MARKER = "[REDACTED]"

ANCESTORS = """
import os
pid = os.getppid()
while pid > 1:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            print(f.read().replace(b"\\0", b"\\n").decode("utf-8", "replace"))
    except OSError:
        pass
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
"""


def _workspace(tmp_path: Path, backend: str) -> tuple[Path, Path, dict[str, str]]:
    secret_file = tmp_path / "secrets" / "deploy.key"
    secret_file.parent.mkdir()
    secret_file.write_text(DEPLOY_TOKEN + "\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ancestors.py").write_text(ANCESTORS)
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
        f'api_key = "${{file:{secret_file}}}"\n\n'
        '[policy]\ntier = "full"\n\n'
        f'[sandbox]\nbackend = "{backend}"\n'
    )
    (ws / "replay.jsonl").write_text("\n".join([
        replay_line("looking around",
                    ("exec", {"argv": ["cat", str(secret_file)]}),
                    ("exec", {"argv": ["printenv"]}),
                    ("exec", {"argv": ["python3", "ancestors.py"]}),
                    ("exec", {"argv": ["echo", "ordinary-output-stays"]})),
        replay_line(f"the key is {PROVIDER_KEY} and the token {DEPLOY_TOKEN}; done"),
    ]) + "\n")
    env = {"IO_STORE": str(tmp_path / "state.db"), "ANTHROPIC_API_KEY": PROVIDER_KEY}
    return ws, secret_file, env


def _assert_clean(*texts: str) -> None:
    for text in texts:
        assert PROVIDER_KEY not in text
        assert DEPLOY_TOKEN not in text


def _store_bytes(tmp_path: Path) -> bytes:
    files = sorted(tmp_path.glob("state.db*"))
    assert files
    return b"".join(f.read_bytes() for f in files)


@pytest.mark.parametrize("backend", ["floor", "off"])
def test_secrets_never_reach_the_store_events_or_trace(tmp_path: Path, backend: str) -> None:
    ws, _, env = _workspace(tmp_path, backend)
    result = run_io(["run", "inspect", "--json"], cwd=ws, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    _assert_clean(result.stdout, result.stderr)
    run_id = json.loads(result.stdout.splitlines()[0])["run_id"]

    trace = run_io(["trace", run_id, "--json"], cwd=ws, env=env)
    assert trace.returncode == 0, trace.stderr
    _assert_clean(trace.stdout, trace.stderr)

    raw = _store_bytes(tmp_path)
    for value in (PROVIDER_KEY, DEPLOY_TOKEN):
        assert value.encode() not in raw
        assert json.dumps(value).encode() not in raw

    # Controls: the values were there to redact, and ordinary output is untouched.
    results = [json.loads(line) for line in result.stdout.splitlines()]
    outputs = [e["output"] for e in results if e["kind"] == "tool_result"]
    assert outputs[0].endswith(f"stdout:\n{MARKER}\n"), outputs[0]
    assert outputs[3].endswith("stdout:\nordinary-output-stays\n"), outputs[3]
    finals = [e["text"] for e in results if e["kind"] == "completion"]
    assert finals[-1] == f"the key is {MARKER} and the token {MARKER}; done"
    assert b"ordinary-output-stays" in raw
    assert MARKER in trace.stdout


@pytest.mark.parametrize("backend", ["floor", "off"])
def test_io_tool_output_is_redacted(tmp_path: Path, backend: str) -> None:
    ws, secret_file, env = _workspace(tmp_path, backend)
    result = run_io(["tool", "exec", "--json", "--args",
                     json.dumps({"argv": ["cat", str(secret_file)]})], cwd=ws, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    _assert_clean(result.stdout, result.stderr)
    data = json.loads(result.stdout)
    assert data["output"].endswith(f"stdout:\n{MARKER}\n")
    assert data["data"]["stdout"] == f"{MARKER}\n"

    plain = run_io(["tool", "exec", "--json", "--args",
                    json.dumps({"argv": ["echo", "ordinary-output-stays"]})], cwd=ws, env=env)
    assert json.loads(plain.stdout)["data"]["stdout"] == "ordinary-output-stays\n"

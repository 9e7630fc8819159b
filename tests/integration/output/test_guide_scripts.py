"""The scripts of docs/guide/sessions.md run as written (issue 37), with bash and jq, in
a workspace whose scripted model asks a question; `jq` parses every line they produce.
(docs/guide/ci.md's workflow runs in tests/integration/cli/test_ci_guide.py, which also
passes each JSON file it writes through `jq`.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.integration.cli.helpers import make_workspace, replay_line

GUIDE = REPO / "docs" / "guide" / "sessions.md"


def _blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def _env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "io"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m io_harness_cli "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "NO_COLOR": "1"}


def _bash(script: str, ws: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def _jq_parses(text: str) -> None:
    for line in text.splitlines():
        if line.strip():
            parsed = subprocess.run(["jq", "-e", "type == \"object\""], input=line,
                                    capture_output=True, text=True, check=False)
            assert parsed.returncode == 0, (line, parsed.stderr)


def test_the_script_section_runs_as_written_and_jq_reads_every_line(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("asking", ("ask_question", {"question": "Which colour?"})),
        replay_line("blue it is")])
    script = next(b for b in _blocks() if "SID=$(io session new)" in b)
    done = _bash(script, ws, _env(tmp_path))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.splitlines() == ["paused", "Which colour?", "blue it is"]
    for name in ("turn.jsonl", "resumed.jsonl"):
        _jq_parses((ws / name).read_text())
    # The section's other `--json` output is piped through jq under `pipefail`: had jq
    # refused a line, the script would have failed above.


def test_the_session_commands_run_as_written(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])  # each turn: one answer
    env = _env(tmp_path)
    first, steering, tracing = _blocks()[:3]
    made = _bash(first.splitlines()[0].split("#")[0], ws, env)
    sid = made.stdout.strip()
    assert made.returncode == 0 and sid, made.stderr
    rest = "\n".join(first.splitlines()[1:]).replace("SID", sid)
    ran = _bash(rest, ws, env)
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    asks = make_workspace(tmp_path / "asks", [
        replay_line("asking", ("ask_question", {"question": "Which logger?"}))])
    other = _bash("io session new", asks, env).stdout.strip()
    paused = _bash(f'io session turn {other} "which logger?" --json', asks, env)
    assert paused.returncode == 4, paused.stderr
    _jq_parses(paused.stdout)
    run_id = paused.stdout.splitlines()[-1].split('"run_id": "')[1].split('"')[0]
    # The table: a paused run takes a steer (queued) and refuses an interrupt (exit 2).
    steer, interrupt = (line for line in steering.splitlines() if line.strip())
    assert _bash(steer.replace("RUN_ID", run_id), asks, env).returncode == 0
    refused = _bash(interrupt.replace("RUN_ID", run_id), asks, env)
    assert refused.returncode == 2 and f"io resume {run_id}" in refused.stderr
    for line in tracing.splitlines():
        command = line.split("#")[0].strip().replace("RUN", run_id)
        if command:
            shown = _bash(command, asks, env)
            assert shown.returncode == 0, (command, shown.stderr)
            if "--json" in command:
                _jq_parses(shown.stdout)

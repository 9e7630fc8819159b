"""docs/CONTRACT.md, "Exit codes": SIGTERM ends a run like Ctrl-C (checkpointed first,
exit 130, resumable), and every command-line mistake the page lists ends with one
`io: error:` line, one `hint:` line and exit 2 (the real `io` process each time)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line
from tests.integration.cli.test_run_cli import _blocking_workspace, _wait_for


def test_sigterm_checkpoints_exits_130_and_resume_finishes(tmp_path: Path) -> None:
    ws = _blocking_workspace(tmp_path)
    proc = subprocess.Popen([*io_cmd(), "run", "goal", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "started", proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    last = json_lines(out)[-1]
    assert last["kind"] == "run_finished"
    assert last["status"] == "interrupted" and last["exit_code"] == 130
    assert "Traceback" not in err
    (tmp_path / "release").write_text("go")
    resumed = run_io(["resume", str(last["run_id"]), "-w", str(ws), "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert json_lines(resumed.stdout)[-1]["status"] == "finished"


HUGE = "[budget]\nmax_steps = 18446744073709551616\n"
MISTAKES: list[tuple[str, list[bytes], bytes, str]] = [
    # (io.toml extra, argv, stdin, what the error names)
    (HUGE, [b"run", b"goal"], b"", "max_steps"),
    (HUGE, [b"run", b"goal", b"--json"], b"", "max_steps"),
    (HUGE, [b"config", b"check"], b"", "max_steps"),
    ("[budget]\nno_such_key = 1\n", [b"run", b"goal"], b"", "no_such_key"),
    ("[budget\n", [b"run", b"goal"], b"", "io.toml"),
    ("", [b"tool", b"read_file", b"--args", b"{bad"], b"", "not valid JSON"),
    ("", [b"tool", b"no_such_tool"], b"", "unknown tool"),
    ("", [b"resume", b"nope-no-such-run"], b"", "no run"),
    ("", [b"trace", b"nope-no-such-run"], b"", "no run"),
    ("", [b"run", b"goal", b"-w", b"/nonexistent/dir"], b"", "not a directory"),
    ("", [b"run", b"caf\xe9"], b"", "not valid UTF-8"),
    ("", [b"run", b"-"], b"caf\xe9 au lait", "not valid UTF-8"),
    ("", [b"resume", b""], b"", "must not be empty"),
    ("", [b"runs", b"-n", b"0"], b"", "not in the range"),
    ("", [b"runs", b"--no-such-option"], b"", "No such option"),
]


@pytest.mark.parametrize(("toml", "argv", "stdin", "names"), MISTAKES,
                         ids=[b" ".join(m[1]).decode("utf-8", "replace") + (" [io.toml]" if m[0]
                                                                           else "")
                              for m in MISTAKES])
def test_every_command_line_mistake_is_one_error_line_a_hint_and_exit_2(
        tmp_path: Path, toml: str, argv: list[bytes], stdin: bytes, names: str) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")], toml_extra=toml)
    result = subprocess.run([*(a.encode() for a in io_cmd()), *argv], cwd=ws, input=stdin,
                            capture_output=True, timeout=60)
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith(("io: ", "hint: "))]
    assert len(lines) == 2, err
    assert lines[0].startswith("io: error: ") and names in lines[0], err
    assert lines[1].startswith("hint: ") and len(lines[1]) > len("hint: "), err


def test_io_tool_exits_1_when_the_call_fails_or_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    failed = run_io(["tool", "read_file", "--args", '{"path": "missing.txt"}', "-w", str(ws)])
    assert failed.returncode == 1 and "failed" in failed.stderr, failed.stderr
    refused = run_io(["tool", "write_file", "--args", '{"path": "io.toml", "content": "x"}',
                      "-w", str(ws)])
    assert refused.returncode == 1 and "refused" in refused.stderr, refused.stderr
    assert "Traceback" not in failed.stderr + refused.stderr
    ran = run_io(["tool", "read_file", "--args", '{"path": "replay.jsonl"}', "-w", str(ws)])
    assert ran.returncode == 0, ran.stderr

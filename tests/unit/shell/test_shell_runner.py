"""The runner: bash's exit statuses, redirects, bounded output, and a line that leaves
nothing running behind it (timeout or not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_core import ShellData
from harness_core.shell import TIMEOUT_STATUS
from harness_core.tools._shell_tools import Shell
from tests.unit.shell.support import PY, context, pid_alive, wait_for


def _run(root: Path, line: str, **kw: object) -> dict[str, object]:
    args: dict[str, object] = {"line": line}
    timeout = kw.pop("timeout", None)
    if timeout is not None:
        args["timeout_seconds"] = timeout
    outcome = Shell().run(args, context(root, **kw))  # type: ignore[arg-type]
    assert outcome.refused is None, outcome.output
    assert isinstance(outcome.data, ShellData)
    return outcome.data.to_json()


@pytest.mark.parametrize(
    ("line", "status", "stdout"),
    [
        ("false; true", 0, ""),
        ("true; false", 1, ""),
        ("false && echo no || echo yes", 0, "yes\n"),
        ("true || echo no", 0, ""),
        ("false || false && echo no", 1, ""),
        ("true && false || echo rescued; echo end", 0, "rescued\nend\n"),
        ("false | true", 0, ""),
        ("true | false", 1, ""),
        ("echo b a | tr ' ' '\\n' | sort | head -1", 0, "a\n"),
        ("no-such-program-xyz", 127, ""),
        ("no-such-program-xyz || echo fallback", 0, "fallback\n"),
    ],
)
def test_exit_status_follows_bash(tmp_path: Path, line: str, status: int, stdout: str) -> None:
    data = _run(tmp_path, line)
    assert data["exit_status"] == status
    assert data["stdout"] == stdout


def test_a_signal_is_reported_as_128_plus_its_number(tmp_path: Path) -> None:
    script = tmp_path / "die.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert _run(tmp_path, f"{PY} die.py")["exit_status"] == 143


def test_redirects_write_append_and_read_files(tmp_path: Path) -> None:
    data = _run(tmp_path, "echo one > f.txt && echo two >> f.txt && cat < f.txt > g.txt; "
                          "cat g.txt missing 2> err.txt")
    assert (tmp_path / "f.txt").read_text() == "one\ntwo\n"
    assert (tmp_path / "g.txt").read_text() == "one\ntwo\n"
    assert "missing" in (tmp_path / "err.txt").read_text()
    assert data["stdout"] == "one\ntwo\n"
    assert data["stderr"] == ""


def test_a_redirect_only_stage_creates_the_file(tmp_path: Path) -> None:
    assert _run(tmp_path, "> empty.txt")["exit_status"] == 0
    assert (tmp_path / "empty.txt").read_bytes() == b""


def test_a_redirect_that_cannot_open_fails_the_stage_with_status_1(tmp_path: Path) -> None:
    data = _run(tmp_path, "echo x > no/such/dir.txt || echo handled")
    assert data["stdout"] == "handled\n"
    assert "No such file or directory" in str(data["stderr"])


def test_stderr_merge_on_the_last_stage_goes_into_captured_stdout(tmp_path: Path) -> None:
    script = tmp_path / "both.py"
    script.write_text("import sys\nprint('out', flush=True)\nprint('err', file=sys.stderr)\n")
    data = _run(tmp_path, f"echo first | {PY} both.py 2>&1")
    assert data["stdout"] == "out\nerr\n"
    assert data["stderr"] == ""


def test_merge_before_a_file_redirect_keeps_stderr_captured(tmp_path: Path) -> None:
    script = tmp_path / "both.py"
    script.write_text("import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    data = _run(tmp_path, f"{PY} both.py 2>&1 > only-out.txt")
    assert (tmp_path / "only-out.txt").read_text() == "out\n"
    assert data["stdout"] == "err\n"


def test_output_is_bounded_and_the_cut_is_stated_in_bytes(tmp_path: Path) -> None:
    outcome = Shell().run({"line": f"{PY} -c \"print('x' * 100000)\""},
                          context(tmp_path, output_cap=2000))
    assert outcome.data.truncated == 100001 - 1000
    assert "[… 99001 bytes of stdout omitted …]" in outcome.data.stdout
    assert len(outcome.output) < 2500


def test_a_reader_that_stops_early_ends_the_pipeline(tmp_path: Path) -> None:
    data = _run(tmp_path, f"{PY} -c \"print('y' * 10**7)\" | head -c 3")
    assert data["stdout"] == "yyy"
    assert data["exit_status"] == 0


_ORPHANER = """
import subprocess, sys, json
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
open(sys.argv[1], "w").write(json.dumps(child.pid))
"""


def _orphaner(root: Path) -> None:
    (root / "orphaner.py").write_text(_ORPHANER)


def test_timeout_kills_a_grandchild_whose_parent_already_exited(tmp_path: Path) -> None:
    _orphaner(tmp_path)
    data = _run(tmp_path, f"{PY} orphaner.py pid.json && {PY} -c 'import time; time.sleep(60)'",
                timeout=1.5)
    assert data["timed_out"] is True
    assert data["exit_status"] == TIMEOUT_STATUS
    grandchild = json.loads((tmp_path / "pid.json").read_text())
    assert wait_for(lambda: not pid_alive(grandchild), 5)


def test_a_finished_line_leaves_nothing_running(tmp_path: Path) -> None:
    _orphaner(tmp_path)
    data = _run(tmp_path, f"{PY} orphaner.py pid.json")
    assert data["exit_status"] == 0
    grandchild = json.loads((tmp_path / "pid.json").read_text())
    assert wait_for(lambda: not pid_alive(grandchild), 5)


def test_a_missing_working_directory_is_reported_not_run(tmp_path: Path) -> None:
    data = _run(tmp_path, "cd gone; echo here > f.txt")
    assert data["exit_status"] == 1
    assert not (tmp_path / "f.txt").exists()

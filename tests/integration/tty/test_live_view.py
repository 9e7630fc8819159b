"""The live view of `io run` through a real pseudo-terminal: the panel (step, elapsed,
tokens, cost, running tool, plan) is drawn on a colour terminal and the scrollback keeps
the whole trace; NO_COLOR, TERM=dumb, a pipe and --json stay plain; a model that writes
"FAILED" does not turn its line red."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.conftest import run_io
from tests.integration.cli.helpers import make_workspace, replay_line

ESC = "\x1b["
TOML = """[policy]
deny_write = ["secrets/**"]
allow_exec = ["sleep*"]

[prices]
as_of = "2026-11-01"
[prices.models."scripted"]
input_per_mtok = 3.0
output_per_mtok = 15.0
"""


def _workspace(root: Path) -> Path:
    return make_workspace(root, [
        replay_line("FAILED ✗ (the model's own words)",
                    ("todo_write", {"todos": [{"content": "survey the tree", "status": "done"},
                                              {"content": "patch the parser",
                                               "status": "in_progress"}]}),
                    ("exec", {"argv": ["sleep", "0.3"]})),
        replay_line("now write", ("write_file", {"path": "secrets/x", "content": "no"})),
        replay_line("done"),
    ], toml_extra=TOML)


@pytest.fixture()
def spawned() -> Iterator[list[pexpect.spawn]]:
    children: list[pexpect.spawn] = []
    yield children
    for child in children:
        child.close(force=True)


def _pty_run(children: list[pexpect.spawn], ws: Path, *extra: str,
             env: dict[str, str] | None = None) -> str:
    child = pexpect.spawn(sys.executable, ["-m", "io_harness_cli", "run", "goal", "-w", str(ws),
                                           *extra],
                          env={**os.environ, "TERM": "xterm-256color", **(env or {})},
                          encoding="utf-8", timeout=60, dimensions=(50, 160))
    children.append(child)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return str(child.before)


def test_a_terminal_gets_the_live_panel_and_keeps_the_full_trace(
        tmp_path: Path, spawned: list[pexpect.spawn]) -> None:
    out = _pty_run(spawned, _workspace(tmp_path / "w"))
    run_id = re.search(r"run ([0-9a-f]{12}) started", out)
    assert run_id is not None
    assert f"io run {run_id.group(1)}" in out  # the panel's title
    assert re.search(r"step 0\S* · \d+\.\ds elapsed · tokens \d+ · cost \$", out)
    assert "running exec" in out  # the running tool, with its spinner
    assert "survey the tree" in out and "patch the parser" in out  # the plan
    for line in ("step 0", "→ exec", "⛔ refused write secrets/x", "checkpoint step 2",
                 f"run {run_id.group(1)} finished"):
        assert line in out


def test_words_in_the_models_text_do_not_choose_the_colour(
        tmp_path: Path, spawned: list[pexpect.spawn]) -> None:
    out = _pty_run(spawned, _workspace(tmp_path / "w"))
    says = [line for line in out.splitlines() if "says: FAILED" in line]
    assert says and all("\x1b[31m" not in line for line in says)
    refusal = [line for line in out.splitlines() if "⛔ refused" in line]
    assert refusal and all("\x1b[31m" in line for line in refusal)


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_and_a_dumb_terminal_keep_plain_lines(
        tmp_path: Path, spawned: list[pexpect.spawn], env: dict[str, str]) -> None:
    out = _pty_run(spawned, _workspace(tmp_path / "w"), env=env)
    assert ESC not in out
    assert "elapsed" not in out and "running exec" not in out
    assert re.search(r"^\[ +\d+\.\d\ds\] step 0", out, re.M)


def test_a_pipe_keeps_plain_lines(tmp_path: Path) -> None:
    done = run_io(["run", "goal", "-w", str(_workspace(tmp_path / "w"))],
                  env={"TERM": "xterm-256color"})
    assert done.returncode == 0, done.stderr
    assert ESC not in done.stderr and "elapsed" not in done.stderr
    assert "says: FAILED" in done.stderr and done.stdout == "done\n"  # the answer


def test_json_on_a_terminal_writes_only_json_lines(
        tmp_path: Path, spawned: list[pexpect.spawn]) -> None:
    out = _pty_run(spawned, _workspace(tmp_path / "w"), "--json")
    lines = [line for line in out.splitlines() if line.strip()]
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("run_finished") == 1
    assert ESC not in out


def test_the_screen_after_the_run_holds_the_trace_and_not_the_panel(tmp_path: Path) -> None:
    """A screenshot through tmux: what the operator's terminal shows once the run ended."""
    if shutil.which("tmux") is None:
        if os.environ.get("IO_REQUIRE_SANDBOX") == "1":
            pytest.fail("tmux is not installed; .ci/run installs it")
        pytest.skip("tmux is not installed")
    ws = _workspace(tmp_path / "w")
    socket = str(tmp_path / "tmux.sock")
    done = tmp_path / "done"
    # `read` keeps the pane (and its screen) alive after io exits, until kill-server
    command = f"{sys.executable} -m io_harness_cli run goal -w {ws}; echo $? > {done}; read x"
    env = {**os.environ, "TERM": "xterm-256color"}
    subprocess.run(["tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d", "-x", "160",
                    "-y", "60", command], env=env, check=True)
    try:
        deadline = time.monotonic() + 60
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the marker file the shell writes when io exits
        screen = subprocess.run(["tmux", "-S", socket, "capture-pane", "-p", "-S", "-200"],
                                capture_output=True, text=True, check=True).stdout
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True)
    assert done.read_text().strip() == "0"
    assert "step 0" in screen and "⛔ refused write secrets/x" in screen and "finished" in screen
    assert "elapsed" not in screen and "╭" not in screen  # the transient panel is gone

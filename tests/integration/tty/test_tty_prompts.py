"""The terminal paths, through a real pseudo-terminal (pexpect): the question prompt,
the approval prompt of `approval = "ask"`, live tokens marked provisional, and the
session tree drawn with rich."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from harness_core import Store
from tests.integration.cli.helpers import make_workspace, replay_line


@pytest.fixture()
def spawn() -> Iterator[list[pexpect.spawn]]:
    children: list[pexpect.spawn] = []
    yield children
    for child in children:
        child.close(force=True)


def _io(children: list[pexpect.spawn], ws: Path, *args: str,
        env: dict[str, str] | None = None) -> pexpect.spawn:
    child = pexpect.spawn(sys.executable, ["-m", "io_harness_cli", *args, "-w", str(ws)],
                          env={**os.environ, **(env or {})}, encoding="utf-8", timeout=60,
                          dimensions=(50, 220))
    children.append(child)
    return child


def _finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None
    return int(child.exitstatus)


def test_a_question_on_a_terminal_is_prompted_and_answered_by_a_person(
        tmp_path: Path, spawn: list[pexpect.spawn]) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("ask", ("ask_question", {"question": "which colour?"})),
        replay_line("done"),
    ])
    child = _io(spawn, ws, "run", "goal")
    child.expect("the agent asks: which colour\\?")
    child.expect("your answer")
    child.sendline("blue")
    assert _finish(child) == 0, child.before
    with Store(os.environ["IO_STORE"]) as store:
        [run] = store.list_runs(1)
        [question] = store.questions(run.run_id)
    assert (question.answer, question.answered_by) == ("blue", "person")


def test_an_empty_answer_on_a_terminal_pauses_the_run_with_exit_4(
        tmp_path: Path, spawn: list[pexpect.spawn]) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("ask", ("ask_question", {"question": "which colour?"})),
        replay_line("done"),
    ])
    child = _io(spawn, ws, "run", "goal")
    child.expect("your answer")
    child.sendline("")
    child.expect("io resume \\w+ --answer")
    assert _finish(child) == 4


@pytest.mark.parametrize("reply,allowed", [("y", True), ("n", False)])
def test_approval_ask_prompts_on_a_terminal_and_the_answer_decides_the_act(
        tmp_path: Path, spawn: list[pexpect.spawn], reply: str, allowed: bool) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("run it", ("exec", {"argv": ["touch", "made.txt"]})),
        replay_line("done"),
    ], toml_extra='[policy]\napproval = "ask"\n')
    child = _io(spawn, ws, "run", "goal")
    child.expect("approval needed: .*touch")
    child.expect("allow it\\? \\[y/N\\]")
    child.sendline(reply)
    assert _finish(child) == 0, child.before
    assert (ws / "made.txt").exists() is allowed


def test_streamed_tokens_are_shown_live_and_marked_provisional(
        tmp_path: Path, spawn: list[pexpect.spawn]) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("streaming hello there")])
    child = _io(spawn, ws, "run", "goal")
    child.expect("\\(provisional\\) streaming hello there")  # in the live panel
    child.expect("\r\nstreaming hello there\r\n")  # the answer, on stdout, once
    child.expect("finished")
    assert _finish(child) == 0


def test_without_colour_the_streamed_text_is_printed_once(
        tmp_path: Path, spawn: list[pexpect.spawn]) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("look", ("list_dir", {})),
                                         replay_line("streaming hello there")])
    child = _io(spawn, ws, "run", "goal", env={"NO_COLOR": "1"})
    assert _finish(child) == 0
    screen = child.before or ""
    assert "(provisional)" not in screen and "says: look" in screen
    assert screen.count("streaming hello there") == 1, screen  # the answer; no says: line


def test_session_show_draws_a_rich_tree_on_a_terminal(tmp_path: Path,
                                                      spawn: list[pexpect.spawn]) -> None:
    from tests.conftest import run_io

    ws = make_workspace(tmp_path / "w", [replay_line("ok")])
    session = run_io(["session", "new", "-w", str(ws)]).stdout.strip()
    for args in (["first"], ["second"], ["other", "--from", "1"]):
        assert run_io(["session", "turn", session, *args, "-w", str(ws)]).returncode == 0
    child = _io(spawn, ws, "session", "show", session)
    child.expect(f"session {session}")
    child.expect("── .*#1 .*first")
    child.expect("── .*#3 .*other.*\\(branch from #1\\)")
    child.expect("── .*#2 .*second")
    assert _finish(child) == 0

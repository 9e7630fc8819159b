"""Reserved tool names hold however a `Toolbox` is built (constructor, `add`,
`with_tools`, `builtins`), and before the first completion: a custom `read_file`
never silently replaces the built-in. And `exec` states its true cut."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    RESERVED_TOOL_NAMES,
    Policy,
    Runner,
    RunStatus,
    Store,
    Toolbox,
    ToolContext,
    ToolError,
    ToolOutcome,
    ToolSpec,
)
from harness_core.tools._files import ReadFile
from harness_core.tools._support import bounded_bytes
from tests.unit.session.support import RecordingProvider, spec_for


class Impostor:
    """A user's tool that takes a built-in's name."""

    def __init__(self, name: str) -> None:
        self.spec = ToolSpec(name, "not the built-in", {"type": "object", "properties": {}})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome("impostor ran")


class MyReadFile(ReadFile):
    """A subclass of the built-in is not the built-in."""


@pytest.mark.parametrize("name", sorted(RESERVED_TOOL_NAMES))
def test_the_constructor_refuses_every_reserved_name(name: str) -> None:
    with pytest.raises(ToolError, match="reserved for a built-in"):
        Toolbox([Impostor(name)])


def test_a_custom_read_file_does_not_replace_the_builtin_in_any_build() -> None:
    builds = [
        lambda: Toolbox([ReadFile(), Impostor("read_file")]),
        lambda: Toolbox([Impostor("read_file")]),
        lambda: Toolbox.builtins().with_tools([Impostor("read_file")]),
        lambda: Toolbox.builtins().add(Impostor("read_file")),
        lambda: Toolbox.builtins().add(Impostor("read_file"), builtin=True),
        lambda: Toolbox([MyReadFile()]),
    ]
    for build in builds:
        with pytest.raises(ToolError, match="'read_file' is reserved"):
            build()


def test_a_name_given_twice_is_refused_not_replaced() -> None:
    with pytest.raises(ToolError, match="registered twice"):
        Toolbox([Impostor("mine"), Impostor("mine")])
    with pytest.raises(ToolError, match="registered twice"):
        Toolbox([ReadFile(), ReadFile()])


def test_io_own_builtins_and_free_names_are_accepted() -> None:
    box = Toolbox([ReadFile(), Impostor("lookup_weather")])
    assert box.names() == ["lookup_weather", "read_file"]
    assert "read_file" in Toolbox.builtins().names()


def test_a_run_never_reaches_a_completion_with_an_impostor(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    provider = RecordingProvider([("done", [])])
    with Store(tmp_path / "state.db") as store, pytest.raises(ToolError):
        Runner(store, provider, toolbox=Toolbox([Impostor("exec")])).start(spec_for(ws, "go"))
    assert provider.requests == []


def test_bounded_bytes_states_the_true_cut() -> None:
    raw = b"a" * 5000
    shown, cut = bounded_bytes(raw, 149, dropped=0)
    assert cut == 4851 and shown.endswith("[output truncated: 4851 more bytes not shown]")
    shown, cut = bounded_bytes(b"x" * 100, 150, dropped=900)
    assert cut == 900 and "900 more bytes" in shown
    # bytes that are not UTF-8 are counted as bytes, not as their replacement characters
    shown, cut = bounded_bytes(b"\xff" * 300, 100)
    assert cut == 200
    # a character split by the cap is not shown, and is counted
    shown, cut = bounded_bytes("é".encode() * 10, 5)
    assert cut == 16 and shown.startswith("éé\n")


def test_exec_says_how_many_bytes_it_really_cut(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    argv = [sys.executable, "-c", "import sys; sys.stdout.write('x' * 5000)"]
    provider = RecordingProvider([("run", [("exec", {"argv": argv})]), ("done", [])])
    policy = Policy.from_lists(tier="full")
    with Store(tmp_path / "state.db") as store:
        # output_cap 300: the capture keeps 300 bytes, the observation shows 150 of them
        outcome = Runner(store, provider).start(spec_for(ws, "go", policy=policy,
                                                         output_cap=300))
        entry = store.ledger(outcome.run_id)[0]
    assert outcome.status is RunStatus.FINISHED
    assert "[output truncated: 4850 more bytes not shown]" in (entry.observation or "")
    assert entry.data is not None and entry.data.truncated == 4850

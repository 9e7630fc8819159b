"""Process handles: start, poll by cursor, kill the whole tree, the cap, the run-end sweep."""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness_core.clock import SystemClock
from harness_core.errors import ToolError
from harness_core.sandbox import ProcessLauncher
from harness_core.shell import MAX_LIVE_HANDLES, HandleRegistry, RunPlan, prepare
from harness_core.tools._shell_tools import ShellKill, ShellPoll, ShellStart
from harness_core.workspace import Workspace
from tests.unit.shell.support import (
    PY,
    HandleTestStore,
    RecordingGate,
    context,
    native_launcher,
    off_launcher,
    pid_alive,
    wait_for,
)

SLEEP = f"{PY} -c 'import time; time.sleep(120)'"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HandleTestStore]:
    db = HandleTestStore(tmp_path / "state.db")
    yield db
    db.close()


def _registry(root: Path, store: HandleTestStore | None = None,
              launch: ProcessLauncher | None = None, run_id: str = "run-1") -> HandleRegistry:
    return HandleRegistry(
        run_id=run_id, launcher=launch or off_launcher(root), workspace=Workspace(root),
        capture_dir=root.parent / f"capture-{root.name}", clock=SystemClock(), store=store,
    )


def _plan(root: Path, line: str) -> RunPlan:
    plan = prepare(line, Workspace(root), RecordingGate())
    assert isinstance(plan, RunPlan), plan
    return plan


def _with_marker(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if marker in " ".join(proc.info["cmdline"] or ()):
            found.append(proc)
    return found


def _ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return root


def test_poll_reads_new_output_by_cursor_and_reports_exit(tmp_path: Path,
                                                          store: HandleTestStore) -> None:
    root = _ws(tmp_path)
    (root / "talk.py").write_text(
        "import sys, pathlib, time\n"
        "print('one', flush=True)\n"
        "while not pathlib.Path('go').exists(): time.sleep(0.01)\n"
        "print('two', flush=True)\nprint('oops', file=sys.stderr, flush=True)\n"
    )
    with _registry(root, store) as registry:
        started = registry.start(_plan(root, f"{PY} talk.py"))
        handle = started.handle_id
        assert handle == "h1" and started.pids
        texts: list[str] = []

        def read_until(text: str) -> bool:
            texts.append(registry.poll(handle).text)
            return text in "".join(texts)

        assert wait_for(lambda: read_until("one\n"))
        assert "".join(texts) == "one\n"
        (root / "go").write_text("")
        assert wait_for(lambda: not registry.poll(handle, 0).running)
        assert read_until("oops\n")
        assert "".join(texts) == "one\ntwo\noops\n"
        final = registry.poll(handle)
        assert (final.running, final.exit_status, final.end_reason) == (False, 0, "exited")
        assert final.cursor == len("one\ntwo\noops\n") and final.text == ""
    record = store.handle_record("run-1", "h1")
    assert record is not None and record.end_reason == "exited" and record.exit_status == 0
    assert "".join(o.text for o in store.handle_output("run-1", "h1")) == "one\ntwo\noops\n"


def test_poll_window_is_bounded_and_counts_what_waits(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    with _registry(root) as registry:
        handle = registry.start(_plan(root, f"{PY} -c \"print('z' * 999)\"")).handle_id
        assert handle is not None
        assert wait_for(lambda: registry.poll(handle, 0).pending == 1000 or False)
        first = registry.poll(handle, 300)
        assert (len(first.text), first.pending) == (300, 700)
        second = registry.poll(handle, 10_000)
        assert (len(second.text), second.pending, second.cursor) == (700, 0, 1000)


def test_poll_never_splits_a_utf8_character(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    with _registry(root) as registry:
        handle = registry.start(_plan(root, "printf 'éé'")).handle_id
        assert handle is not None
        assert wait_for(lambda: not registry.poll(handle, 0).running)
        first = registry.poll(handle, 3)
        assert first.text == "é" and first.cursor == 2
        assert registry.poll(handle, 3).text == "é"


def test_kill_ends_a_grandchild_that_outlived_its_parent(tmp_path: Path,
                                                         store: HandleTestStore) -> None:
    root = _ws(tmp_path)
    marker = f"grandchild-{uuid.uuid4().hex}"
    (root / "parent.py").write_text(
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', '{marker}'])\n"
        "print('spawned', flush=True)\n"
    )
    with _registry(root, store) as registry:
        started = registry.start(_plan(root, f"{PY} parent.py; {SLEEP}"))
        handle = started.handle_id
        assert handle is not None
        parent = started.pids[0]
        assert wait_for(lambda: not pid_alive(parent))
        (grandchild,) = _with_marker(marker)
        assert grandchild.ppid() != parent  # handed to another parent: no link to walk
        outcome = ShellKill().run({"handle": handle}, context(root, handles=registry))
        assert "killed handle h1" in outcome.output
        assert wait_for(lambda: not _with_marker(marker))
        assert registry.live_count() == 0
    record = store.handle_record("run-1", "h1")
    assert record is not None and record.end_reason == "killed"


_ESCAPER = """
import pathlib, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "escapee-" + sys.argv[1]],
                 start_new_session=True)
print("escaped", flush=True)
while not pathlib.Path("go").exists():
    time.sleep(0.01)
"""


def _setsid_escape(root: Path, registry: HandleRegistry, *, tracked: bool) -> str:
    token = uuid.uuid4().hex
    marker = f"escapee-{token}"  # only the escapee's argv holds it
    (root / "escaper.py").write_text(_ESCAPER)
    started = registry.start(_plan(root, f"{PY} escaper.py {token}; {SLEEP}"))
    assert started.handle_id is not None
    assert wait_for(lambda: len(_with_marker(marker)) == 1)
    (escapee,) = _with_marker(marker)
    if tracked:
        assert wait_for(lambda: escapee.pid in registry.tracked_pids(started.handle_id or ""))
        # Negative control: the escapee left the stage's process group, so killpg alone
        # would miss it.
        assert os.getpgid(escapee.pid) != started.pids[0]
    (root / "go").write_text("")
    assert wait_for(lambda: not pid_alive(started.pids[0]))
    if tracked:
        assert escapee.is_running()  # outlived its parent, outside the group
    registry.kill(started.handle_id)
    return marker


def test_setsid_grandchild_is_killed_through_descendant_tracking(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    with _registry(root) as registry:
        marker = _setsid_escape(root, registry, tracked=True)
        assert wait_for(lambda: not _with_marker(marker))


def test_setsid_grandchild_is_killed_by_the_native_sandbox(tmp_path: Path) -> None:
    # The stage is bwrap leading a PID namespace: when the stage ends the namespace ends,
    # and the escapee with it, whatever the descendant tracking saw.
    root = _ws(tmp_path)
    launch = native_launcher(root)
    if launch is None:
        pytest.skip("no native sandbox on this host")
    with _registry(root, launch=launch) as registry:
        marker = _setsid_escape(root, registry, tracked=False)
        assert wait_for(lambda: not _with_marker(marker))


def test_the_ninth_handle_is_refused_naming_the_cap_and_a_kill_frees_a_slot(
    tmp_path: Path,
) -> None:
    root = _ws(tmp_path)
    with _registry(root) as registry:
        ctx = context(root, handles=registry)
        handles = []
        for _ in range(MAX_LIVE_HANDLES):
            outcome = ShellStart().run({"line": SLEEP}, ctx)
            assert not outcome.is_error, outcome.output
            handles.append(outcome.data.handle)
        ninth = ShellStart().run({"line": SLEEP}, ctx)
        assert ninth.is_error and ninth.refused is not None
        assert "MAX_LIVE_HANDLES = 8" in ninth.refused.reason
        assert "MAX_LIVE_HANDLES" in ninth.output
        with pytest.raises(ToolError, match="MAX_LIVE_HANDLES"):
            registry.start(_plan(root, SLEEP))
        ShellKill().run({"handle": handles[0]}, ctx)
        again = ShellStart().run({"line": SLEEP}, ctx)
        assert not again.is_error
        assert registry.live_count() == MAX_LIVE_HANDLES


def test_a_handle_line_is_checked_exactly_like_shell(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    with _registry(root) as registry:
        ctx = context(root, handles=registry)
        construct = ShellStart().run({"line": "sleep 1 &"}, ctx)
        assert construct.refused is not None and construct.refused.construct == "background"
        outside = ShellStart().run({"line": "echo x > ../leak"}, ctx)
        assert outside.refused is not None and outside.refused.act == "write"
        assert registry.live_count() == 0


def test_handles_need_a_run(tmp_path: Path) -> None:
    outcome = ShellStart().run({"line": "ls"}, context(_ws(tmp_path)))
    assert outcome.is_error and "need a run" in outcome.output


class _Stop(Exception):
    """Stands in for the loop's budget stop, cancellation and a tool's panic."""


def _end_run(registry: HandleRegistry, way: str) -> None:
    if way == "finish":
        with registry:
            pass
    elif way in ("budget stop", "cancel"):
        registry.close_all()
    elif way == "exception":
        with pytest.raises(_Stop), registry:
            raise _Stop(way)
    elif way == "ctrl-c":
        with pytest.raises(KeyboardInterrupt), registry:
            raise KeyboardInterrupt
    elif way == "tool panic":
        with pytest.raises(ZeroDivisionError), registry:
            _ = 1 / 0
    elif way == "dropped":
        pass  # no close_all ever called: the weakref finalizer is the backstop
    else:  # pragma: no cover
        raise AssertionError(way)


@pytest.mark.parametrize(
    "way", ["finish", "budget stop", "cancel", "exception", "ctrl-c", "tool panic", "dropped"]
)
def test_every_live_handle_dies_however_the_run_ends(tmp_path: Path, store: HandleTestStore,
                                                     way: str) -> None:
    root = _ws(tmp_path)
    marker = f"sweep-{uuid.uuid4().hex}"
    registry = _registry(root, store if way != "dropped" else None)
    for _ in range(2):
        registry.start(_plan(root, f"{PY} -c 'import time; time.sleep(120)' {marker}"))
    assert wait_for(lambda: len(_with_marker(marker)) == 2)
    _end_run(registry, way)
    del registry
    gc.collect()
    assert wait_for(lambda: not _with_marker(marker))
    if way != "dropped":
        assert [r.end_reason for r in store.handles("run-1")] == ["swept", "swept"]
        assert store.live_handles("run-1") == []
    assert not list((tmp_path / "capture-ws").glob("*.log"))


def test_an_orphaned_handle_is_answered_from_its_record_and_never_signalled(
    tmp_path: Path, store: HandleTestStore
) -> None:
    root = _ws(tmp_path)
    marker = f"orphan-{uuid.uuid4().hex}"
    first = _registry(root, store)
    try:
        started = first.start(_plan(root, f"{PY} -c 'import time; time.sleep(120)' {marker}"))
        assert started.handle_id == "h1"
        # A second registry for the same run: what a resume in a new process builds.
        second = _registry(root, store)
        assert second.orphaned_at_start == 1
        ctx = context(root, handles=second)
        polled = ShellPoll().run({"handle": "h1"}, ctx)
        killed = ShellKill().run({"handle": "h1"}, ctx)
        for outcome in (polled, killed):
            assert "orphaned" in outcome.output and "shell_start" in outcome.output
            assert outcome.data.orphaned is True
        second.close_all()
        assert len(_with_marker(marker)) == 1  # never signalled by the new registry
        with _registry(root, store) as third:
            fresh = ShellStart().run({"line": "true"}, context(root, handles=third))
            assert fresh.is_error is False and fresh.data.handle == "h2"
    finally:
        first.close_all()
    assert wait_for(lambda: not _with_marker(marker))
    record = store.handle_record("run-1", "h1")
    assert record is not None and record.end_reason == "orphaned"


def test_unknown_handle_is_an_error_outcome(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    with _registry(root) as registry:
        outcome = ShellPoll().run({"handle": "h9"}, context(root, handles=registry))
        assert outcome.is_error and "no handle 'h9'" in outcome.output

"""The ledger's records of placeholders and escapees, and what a sweep does with a dead
owner's (#22): untouched placeholders are removed whichever store is asked about;
touched ones, and another file made at the same path, are kept."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil

from harness_core.sandbox._ledger import Ledger, read_ledger
from harness_core.sandbox._placeholders import is_untouched, remove_recorded
from harness_core.sandbox._sweep import sweep


def _identity(path: Path) -> tuple[int, int, int]:
    info = os.lstat(path)
    return info.st_dev, info.st_ino, info.st_ctime_ns


def test_the_reader_replays_placeholders_and_escapees(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").touch()
    ledger.note_placeholder(tmp_path / "a", _identity(tmp_path / "a"))
    ledger.note_placeholder(tmp_path / "b", _identity(tmp_path / "b"))
    ledger.forget_placeholder(tmp_path / "b")
    ledger.add(os.getpid(), None)
    ledger.note_seen(os.getpid(), 4242, 123.0)
    ledger.note_seen(99, 4343, 123.0)  # not under a recorded command: not kept
    data = read_ledger(ledger.path.read_text())
    assert data is not None
    assert [p["path"] for p in data["placeholders"]] == [str(tmp_path / "a")]
    assert [(s["pid"], s["of"]) for s in data["seen"]] == [(4242, os.getpid())]
    assert data["entries"][0]["sid"] == os.getsid(0)
    ledger.remove(os.getpid())  # the command ended: its escapees were ended with it
    data = read_ledger(ledger.path.read_text())
    assert data is not None and data["seen"] == [] and data["entries"] == []
    ledger.close_file()


def test_a_compacted_ledger_keeps_its_placeholders_and_escapees(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    (tmp_path / "p").mkdir()
    ledger.note_placeholder(tmp_path / "p", _identity(tmp_path / "p"))
    ledger.add(os.getpid(), None)
    ledger.note_seen(os.getpid(), 4242, 123.0)
    ledger._compact()  # pyright: ignore[reportPrivateUsage]
    data = read_ledger(ledger.path.read_text())
    assert data is not None
    assert [p["path"] for p in data["placeholders"]] == [str(tmp_path / "p")]
    assert [s["pid"] for s in data["seen"]] == [4242]
    ledger.close_file()


def _dead_owner(folder: Path, workspace: Path, store: Path) -> tuple[int, Path]:
    """Fork an owner that makes three placeholders in `workspace`, records them and a
    command of a run in `store`, and dies; returns the command's pid and the ledger."""
    reader, writer = os.pipe()
    owner = os.fork()
    if owner == 0:
        try:
            os.close(reader)
            ledger = Ledger(folder)
            ledger.note_run("run-1", str(store))
            for name in (".git", ".gitmodules", "io.local.toml"):
                path = workspace / name
                path.mkdir() if name == ".git" else path.touch()
                ledger.note_placeholder(path, _identity(path))
            sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
            ledger.add(sleeper.pid, None)
            os.write(writer, str(sleeper.pid).encode())
        finally:
            os._exit(0)
    os.close(writer)
    pid = int(os.read(reader, 64))
    os.close(reader)
    os.waitpid(owner, 0)
    return pid, folder / f"io-{owner}.json"


def test_a_dead_owners_untouched_placeholders_are_removed_by_any_store(tmp_path: Path) -> None:
    folder, workspace = tmp_path / "ledgers", tmp_path / "ws"
    folder.mkdir()
    workspace.mkdir()
    theirs = tmp_path / "theirs.db"
    theirs.write_bytes(b"")
    pid, path = _dead_owner(folder, workspace, theirs)
    try:
        (workspace / ".gitmodules").write_text("[submodule]\n")  # written since: kept
        swept = sweep(folder, store=str(tmp_path / "mine.db"))
        assert [s.removed for s in swept] == [(str(workspace / ".git"),
                                               str(workspace / "io.local.toml"))]
        assert [s.killed for s in swept] == [()]  # the command waits for its own store
        assert sorted(p.name for p in workspace.iterdir()) == [".gitmodules"]
        assert path.exists() and psutil.pid_exists(pid)
        # The same path made again is not io's placeholder, though it is empty.
        (workspace / "io.local.toml").touch()
        swept = sweep(folder, store=str(theirs))
        assert [s.removed for s in swept] == [()]
        assert [k["pid"] for s in swept for k in s.killed if k["ended"]] == [pid]
        assert (workspace / "io.local.toml").exists() and not path.exists()
    finally:
        if psutil.pid_exists(pid):
            os.kill(pid, 9)


def test_a_placeholder_with_an_entry_or_another_inode_is_not_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    made = _identity(folder)
    assert is_untouched(folder, made)
    (folder / "x").touch()
    assert not is_untouched(folder, made)
    link = tmp_path / "l"
    link.symlink_to(folder)
    assert not is_untouched(link, _identity(link))  # a link is never a placeholder


def test_a_placeholder_made_but_not_yet_noted_when_io_died_is_still_swept(
        tmp_path: Path) -> None:
    """The CI failure of 2026-12-06: kill -9 landed between making `io.local.toml` and
    noting it, and the next command's sweep left it, so `io undo` saw a file changed
    outside io. The ledger now names a placeholder before it is made."""
    folder, workspace = tmp_path / "ledgers", tmp_path / "ws"
    folder.mkdir()
    workspace.mkdir()
    owner = os.fork()
    if owner == 0:
        try:
            ledger = Ledger(folder)
            ledger.note_run("run-1", str(tmp_path / "s.db"))
            for name in (".git", "io.local.toml", "never-made"):
                ledger.announce_placeholder(workspace / name, is_dir=name == ".git")
            (workspace / ".git").mkdir()
            (workspace / "io.local.toml").touch()
        finally:
            os._exit(0)  # killed here: nothing was noted, nothing released
    os.waitpid(owner, 0)
    swept = sweep(folder, store=str(tmp_path / "s.db"))
    assert [sorted(s.removed) for s in swept] == [[str(workspace / ".git"),
                                                   str(workspace / "io.local.toml")]]
    assert list(workspace.iterdir()) == []


def test_an_announced_placeholder_is_taken_only_if_made_just_after_the_announcement(
        tmp_path: Path) -> None:
    made = tmp_path / "io.local.toml"
    made.touch()
    ctime = os.lstat(made).st_ctime_ns

    def entry(kind: str, announced: int) -> dict[str, object]:
        return {"path": str(made), "kind": kind, "announced": announced}

    second = 10**9
    assert remove_recorded([entry("file", ctime + second)]) == []  # made before it
    assert remove_recorded([entry("file", ctime - 60 * second)]) == []  # made long after
    assert remove_recorded([entry("dir", ctime)]) == []  # another kind
    made.write_text("x")
    assert remove_recorded([entry("file", ctime)]) == []  # holds content now
    made.write_text("")
    ctime = os.lstat(made).st_ctime_ns
    assert remove_recorded([{"path": "io.local.toml", "kind": "file",
                             "announced": ctime}]) == []  # not absolute
    assert remove_recorded([entry("file", ctime - second)]) == [str(made)]
    assert not made.exists()
    assert remove_recorded([entry("file", ctime)]) == []  # nothing there

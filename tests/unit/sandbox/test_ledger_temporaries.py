"""A workspace write's temporary file, named in the process ledger while it exists, so
the next `io` removes what a `kill -9` mid-write left beside the target (which
`io undo` would otherwise refuse as a file changed outside io)."""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

import pytest

from harness_core import workspace as workspace_module
from harness_core.errors import WorkspaceError
from harness_core.sandbox._ledger import Ledger, read_ledger
from harness_core.sandbox._sweep import sweep
from harness_core.workspace import Workspace, record_temporaries


def _killed_mid_write(folder: Path, root: Path, target: str) -> int:
    """Fork an owner with a ledger that writes `target` and is killed by SIGKILL after
    half the bytes are in the temporary file; returns its pid once it is dead.

    Fault injection: the kill lands inside `_write_all` at a chosen byte, which no
    outside timing can hit every time (a real write of this size takes microseconds)."""
    owner = os.fork()
    if owner == 0:
        try:
            ledger = Ledger(folder)
            ledger.note_run("run-1", str(root / "s.db"))
            record_temporaries((ledger.note_temporary, ledger.forget_temporary))

            def write_half(fd: int, data: bytes) -> None:
                os.write(fd, data[: len(data) // 2])
                os.kill(os.getpid(), signal.SIGKILL)

            workspace_module._write_all = write_half  # pyright: ignore[reportPrivateUsage]
            Workspace(root).write_bytes(target, b"x" * 4096)
        finally:
            os._exit(0)  # never reached: killed inside the write
    _, status = os.waitpid(owner, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return owner


def _temporaries(root: Path) -> list[Path]:
    return sorted(root.rglob(".io-*.tmp"))


def test_the_next_sweep_removes_the_temporary_file_of_a_write_killed_midway(
        tmp_path: Path) -> None:
    folder, root = tmp_path / "ledgers", tmp_path / "ws"
    folder.mkdir()
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("old\n")
    owner = _killed_mid_write(folder, root, "sub/a.txt")
    left = _temporaries(root)
    assert len(left) == 1 and left[0].stat().st_size == 2048
    assert (root / "sub" / "a.txt").read_text() == "old\n"  # the target was never touched
    data = read_ledger((folder / f"io-{owner}.json").read_text())
    assert data is not None
    assert data["temporaries"] == [{"root": str(root), "path": f"sub/{left[0].name}"}]
    swept = sweep(folder, store=str(root / "s.db"))
    assert [s.removed for s in swept] == [(str(left[0]),)]
    assert _temporaries(root) == [] and (root / "sub" / "a.txt").read_text() == "old\n"


def test_a_finished_or_failed_write_leaves_nothing_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger(tmp_path / "ledgers")
    ledger.folder.mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    # The worker's own recorder (a run an earlier test started) comes back afterwards.
    monkeypatch.setattr(workspace_module, "_temporaries",
                        (ledger.note_temporary, ledger.forget_temporary))
    ws = Workspace(root)
    ws.write_text("a.txt", "one\n")
    ws.write_text("d/b.txt", "two\n")
    with pytest.raises(WorkspaceError, match="directory"):
        ws.write_text("d", "refused before any temporary file is made\n")

    def disk_full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(workspace_module, "_write_all", disk_full)
    with pytest.raises(WorkspaceError, match="no space left on device"):
        ws.write_text("a.txt", "three\n")  # its temporary is discarded, and said so
    text = ledger.path.read_text()
    assert text.count('"temporary"') == 3 and text.count('"renamed"') == 3
    data = read_ledger(text)
    assert data is not None and data["temporaries"] == []
    assert _temporaries(root) == [] and (root / "a.txt").read_text() == "one\n"
    ledger._compact()  # pyright: ignore[reportPrivateUsage]
    assert '"temporary"' not in ledger.path.read_text()
    ledger.close_file()


def test_a_compacted_ledger_keeps_a_temporary_still_open(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.note_temporary(tmp_path, ".io-0123456789abcdef.tmp")
    ledger.note_temporary(tmp_path, "x/.io-fedcba9876543210.tmp")
    ledger.forget_temporary(tmp_path, "x/.io-fedcba9876543210.tmp")
    ledger.forget_temporary(tmp_path, "never-noted")  # nothing to forget: no line
    ledger._compact()  # pyright: ignore[reportPrivateUsage]
    data = read_ledger(ledger.path.read_text())
    assert data is not None
    assert data["temporaries"] == [{"root": str(tmp_path), "path": ".io-0123456789abcdef.tmp"}]
    assert "never-noted" not in ledger.path.read_text()
    ledger.close_file()


def test_the_reader_skips_malformed_temporary_lines(tmp_path: Path) -> None:
    lines = ['{"owner_pid": 1, "owner_started": 0, "token": "t"}',
             '{"temporary": {"root": "/w", "path": "a/.io-0123456789abcdef.tmp"}}',
             '{"temporary": {"root": 5, "path": "b"}}', '{"temporary": "c"}',
             '{"renamed": {"root": "/w"}}', '{"renamed": ["/w", "a"]}']
    data = read_ledger("\n".join(lines) + "\n")
    assert data is not None
    assert data["temporaries"] == [{"root": "/w", "path": "a/.io-0123456789abcdef.tmp"}]


NAME = ".io-0123456789abcdef.tmp"


def test_remove_temporary_takes_only_a_write_s_own_kind_of_file(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    ws = Workspace(root)
    (root / "d" / NAME).write_text("half")
    assert ws.remove_temporary(f"d/{NAME}")
    assert not (root / "d" / NAME).exists()
    assert not ws.remove_temporary(f"d/{NAME}")  # nothing there any more
    for name in ("a.txt", ".io-0123.tmp", ".io-0123456789ABCDEF.tmp", f"{NAME}x"):
        (root / name).write_text("mine")
        assert not ws.remove_temporary(name), name
        assert (root / name).exists()
    (root / "dir" / NAME).mkdir(parents=True)  # a directory of that name
    assert not ws.remove_temporary(f"dir/{NAME}")
    os.mkfifo(root / "d" / NAME)  # a FIFO of that name
    assert not ws.remove_temporary(f"d/{NAME}")
    assert (root / "d" / NAME).exists()


def test_remove_temporary_never_follows_a_link_or_leaves_the_root(tmp_path: Path) -> None:
    outside, root = tmp_path / "outside", tmp_path / "ws"
    outside.mkdir()
    root.mkdir()
    (outside / NAME).write_text("not io's")
    (root / "link").symlink_to(outside)
    (root / NAME).symlink_to(outside / NAME)
    ws = Workspace(root)
    assert not ws.remove_temporary(f"link/{NAME}")  # a link on the way
    assert not ws.remove_temporary(NAME)  # the name itself is a link
    assert not ws.remove_temporary(f"../outside/{NAME}")
    assert not ws.remove_temporary(str(outside / NAME))
    assert (outside / NAME).read_text() == "not io's" and (root / NAME).is_symlink()


def test_an_operator_file_killed_midway_is_swept_too(tmp_path: Path) -> None:
    """A report written for the operator (`host.write_operator_file`) goes through a
    temporary file of the same kind, named in the ledger the same way."""
    from harness_core.host import _files as host_files
    from harness_core.sandbox import _ledger

    folder, reports = tmp_path / "ledgers", tmp_path / "reports"
    folder.mkdir()
    reports.mkdir()
    (reports / "io-gates.xml").write_text("<old/>\n")
    owner = os.fork()
    if owner == 0:
        try:
            # This process's ledger, whatever an earlier test in this worker activated.
            _ledger._active = Ledger(folder)  # pyright: ignore[reportPrivateUsage]
            _ledger._active.note_run("run-1", str(tmp_path / "s.db"))  # pyright: ignore[reportPrivateUsage]

            def write_half(fd: int, data: bytes) -> None:
                os.write(fd, data[: len(data) // 2])
                os.kill(os.getpid(), signal.SIGKILL)

            host_files._write_all = write_half  # pyright: ignore[reportPrivateUsage]
            host_files.write_operator_file(reports / "io-gates.xml", b"<new/>\n" * 100,
                                           workspace=None)
        finally:
            os._exit(0)
    _, status = os.waitpid(owner, 0)
    assert os.WIFSIGNALED(status)
    left = _temporaries(reports)
    assert len(left) == 1
    swept = sweep(folder, store=str(tmp_path / "s.db"))
    assert [s.removed for s in swept] == [(str(left[0]),)]
    assert _temporaries(reports) == [] and (reports / "io-gates.xml").read_text() == "<old/>\n"

"""Snapshots under races and faults (#35): a folder swapped for a link while the scan
runs is never followed, a file written while it is read is recorded as unknown (never
an error), and a blob that cannot be written stops snapshots with the cause named.

The racers are real processes renaming and writing in a loop while the scans run.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core import Message, Store
from harness_core.events import Event
from harness_core.run._rewind import undo_step
from harness_core.run._scan import UNKNOWN
from harness_core.run._scanner import Scanner
from harness_core.run._snapshots import SnapshotKeeper

SWAPPER = """
import os, sys
ws, outside = sys.argv[1:3]
sub, aside = os.path.join(ws, "sub"), os.path.join(ws, "sub.aside")
while not os.path.exists(os.path.join(ws, "stop")):
    os.rename(sub, aside)
    os.symlink(outside, sub)
    os.unlink(sub)
    os.rename(aside, sub)
"""

WRITER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
offset = 0
while True:  # rewrites the file in place: its size (and the disk used) stays the same
    os.pwrite(fd, os.urandom(16) * 256, offset)
    offset = (offset + 4096) % (8 << 20)
"""


@pytest.fixture
def racer() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def test_a_folder_swapped_for_a_link_is_never_followed(
        tmp_path: Path, racer: list[subprocess.Popen[bytes]]) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "inside.txt").write_text("mine\n")
    for i in range(100):  # read between listing the root and entering `sub`: a wide window
        (ws / f"t{i:03d}").write_text("t" * 1000)
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    racer.append(subprocess.Popen([sys.executable, "-c", SWAPPER, str(ws), str(outside)]))
    scanner = Scanner(ws, tmp_path / "blobs")
    seen: set[str] = set()
    for _ in range(150):  # 64cf79c followed the link ~1 scan in 12 and raised ~1 in 30
        manifest = scanner.scan(trust_stat=False)
        seen |= set(manifest)
        assert not any("secret" in path for path in manifest), manifest
    (ws / "stop").touch()
    racer[0].wait(timeout=30)
    assert "sub/inside.txt" in seen  # the scans did see the folder between the swaps
    blobs = [p.read_bytes() for p in (tmp_path / "blobs").rglob("*") if p.is_file()]
    assert not any(b"OUTSIDE-SECRET" in b for b in blobs)


def _store(tmp_path: Path, ws: Path) -> Store:
    store = Store(tmp_path / "state.db")
    store.create_run("r1", goal="g", workspace=str(ws), model="m", settings={}, policy={},
                     sandbox=None, messages=[Message.user("go")])
    return store


def test_a_file_written_while_read_is_unknown_and_undo_says_so(
        tmp_path: Path, racer: list[subprocess.Popen[bytes]]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    grow = ws / "grow.bin"
    grow.write_bytes(b"x" * (8 << 20))
    racer.append(subprocess.Popen([sys.executable, "-c", WRITER, str(grow)]))
    written = grow.stat().st_mtime_ns
    while grow.stat().st_mtime_ns == written:  # the writer runs
        pass
    events: list[Event] = []
    with _store(tmp_path, ws) as store:
        keeper = SnapshotKeeper(store, "r1", ws, tmp_path / "snaps", 1 << 30, frozenset(),
                                events.append)
        keeper.start(0)
        racer[0].kill()
        racer[0].wait()
        (ws / "a.txt").write_text("b\n")
        keeper.after(0)
        rows = store.snapshots("r1")
        assert rows[0].manifest["grow.bin"] == UNKNOWN
        assert rows[0].manifest["a.txt"][1] == 2 and keeper.active and not events
        refused = pytest.raises(Exception, undo_step, store, "r1", tmp_path / "snaps",
                                alive=lambda pid, started: False)
        assert "grow.bin" in str(refused.value) and "while" in str(refused.value)
        assert type(refused.value).__name__ == "UsageError"


def test_a_blob_that_cannot_be_written_stops_snapshots_and_names_the_cause(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    snaps = tmp_path / "snaps"
    events: list[Event] = []
    with _store(tmp_path, ws) as store:
        blob_root = snaps / store.store_id() / "r1"
        blob_root.mkdir(parents=True)
        (blob_root / "blobs").write_text("a file where the blob folder goes\n")
        keeper = SnapshotKeeper(store, "r1", ws, snaps, 1 << 30, frozenset(), events.append)
        keeper.start(0)
        keeper.after(0)
        rows = store.snapshots("r1")
        assert [r.kind for r in rows] == ["capped"] and not keeper.active
        assert rows[0].note is not None and "writing a snapshot failed" in rows[0].note
        assert len(events) == 1 and "snapshots stopped at step 0" in str(events[0].data)
        refused = pytest.raises(Exception, undo_step, store, "r1", snaps,
                                alive=lambda pid, started: False)
        assert "writing a snapshot failed" in str(refused.value)

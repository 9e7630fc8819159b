"""A store caught in the middle of a checkpoint is not mistaken for a truncated one.

A checkpoint copies pages from the log into the file in page order, so page 1 (whose
header holds the new page count) lands before the pages that extend the file. For that
moment the header says more pages than the file has, and readers take the rest from
the log. The state is made for real here: a live writer with automatic checkpoints off
grows the log, then page 1's newest frame is copied into the file, as a checkpoint's
first write does. The file check that another process (`io runs` during an `io run`)
makes on open must not call it truncated.
"""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

from harness_core import Message, Store
from harness_core.store import _check


def _newest_frame_of_page_one(wal: bytes, page_size: int) -> bytes:
    frame = 24 + page_size
    newest = b""
    for offset in range(32, len(wal) - frame + 1, frame):
        if struct.unpack(">I", wal[offset:offset + 4])[0] == 1:
            newest = wal[offset + 24:offset + frame]
    assert newest, "page 1 is not in the log"
    return newest


def test_a_header_ahead_of_the_file_while_the_log_holds_the_pages_is_not_damage(
        tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with Store(path) as store:
        store.create_run("r0", goal="g", workspace="/w", model="m", settings={}, policy={},
                         sandbox=None, messages=[Message.user("x")])
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE IF NOT EXISTS filler (body TEXT)")
    writer.executemany("INSERT INTO filler VALUES (?)", [("y" * 3000,) for _ in range(200)])
    try:
        wal = (tmp_path / "state.db-wal").read_bytes()
        page_size = struct.unpack(">I", wal[8:12])[0]
        page_one = _newest_frame_of_page_one(wal, page_size)
        with open(path, "r+b") as handle:  # the checkpoint's first write
            handle.write(page_one)
        size = path.stat().st_size
        claimed = struct.unpack(">I", page_one[28:32])[0] * page_size
        assert claimed > size  # the header is ahead of the file, as mid-checkpoint
        assert _check.inspect_file(path) == size  # no StoreDamaged
    finally:
        writer.close()

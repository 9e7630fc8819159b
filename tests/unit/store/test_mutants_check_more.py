"""The store's self-check, the findings mutation testing left (`store/_check.py`): a path
or a log that cannot even be looked at (a symbolic-link loop) named with the store and
the system's reason, the store named in quick_check's and a foreign log's findings, a
32 KiB page size, a log written on a big-endian machine and a store without a store_id."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

import pytest

from harness_core import Store, StoreDamaged, StoreUnavailable
from harness_core.store import _check
from tests.unit.store.test_check_faults import _holding_log, _store

_LOOP = "Too many levels of symbolic links"


def test_a_store_path_that_loops_is_named_with_the_systems_reason(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    path.symlink_to(path)
    with pytest.raises(StoreUnavailable) as info:
        _check.inspect_file(path)
    assert (info.value.path, str(info.value)) == (
        str(path), f"store {path} cannot be used: {_LOOP}")


def test_a_log_that_loops_is_named_with_its_store(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    wal = tmp_path / "s.db-wal"
    wal.symlink_to(wal)
    with pytest.raises(StoreUnavailable) as info:
        _check.inspect_file(path)
    assert (info.value.path, str(info.value)) == (
        str(path), f"store {path} cannot be used: its log s.db-wal: {_LOOP}")


def test_quick_checks_finding_names_the_store(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db", runs=30)
    with open(path, "r+b") as handle:
        handle.seek(4096 * 5 + 8)
        handle.write(b"\xff" * 64)
    info = path.stat()
    _check._checked.discard((info.st_dev, info.st_ino))
    with pytest.raises(StoreDamaged) as caught:
        Store(path)
    assert caught.value.path == str(path)
    assert str(caught.value).startswith(f"store {path} is damaged: quick_check found: ")


def test_a_foreign_logs_finding_names_the_store(tmp_path: Path) -> None:
    mine = _store(tmp_path / "a.db")
    other = _store(tmp_path / "b.db")
    holder, log = _holding_log(other)
    try:
        (tmp_path / "a.db-wal").write_bytes(log.read_bytes())
        conn = sqlite3.connect(_check.readonly_uri(mine), uri=True)
        try:
            with pytest.raises(StoreDamaged) as info:
                _check.verify_log_owner(conn, mine)
        finally:
            conn.close()
    finally:
        holder.close()
    assert info.value.path == str(mine)
    assert str(info.value).startswith(f"store {mine} is damaged: its write-ahead log a.db-wal")


def test_a_32k_page_size_is_read_as_32768(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA page_size = 32768")
        conn.execute("CREATE TABLE t (x)")
    assert path.read_bytes()[16:18] == b"\x80\x00"
    assert _check._check_header(path, path.stat().st_size) == 32768
    assert _check.inspect_file(path) == path.stat().st_size


def _big_endian_header(page_size: int) -> bytes:
    """A log header as a big-endian machine writes it (magic ...83), its checksum
    computed here, word by word, as SQLite's documentation gives it."""
    head = struct.pack(">6I", 0x377F0683, 3007000, page_size, 0, 1, 2)
    words = struct.unpack(">6I", head)
    s0 = s1 = 0
    for i in range(0, 6, 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return head + struct.pack(">2I", s0, s1)


def test_a_log_written_on_a_big_endian_machine_is_read_as_one(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    (tmp_path / "s.db-wal").write_bytes(_big_endian_header(4096))
    assert _check.inspect_file(path) == path.stat().st_size


def test_a_store_without_a_store_id_has_none(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn = sqlite3.connect(path)
    try:
        assert _check._store_id(conn) is None
    finally:
        conn.close()


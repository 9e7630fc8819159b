"""Every finding of the store's self-check names the file it is about, and `io store
check`'s report of a damaged store is whole (mutation testing's survivors in
`store/_check.py`: the path dropped from a finding, a report's fields, the log's size
test). The findings' own words are pinned in test_check_faults.py."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from harness_core import StoreDamaged, StoreUnavailable, check_store
from harness_core.store import _check
from tests.unit.store.test_check_faults import _store, _wal_header


def _damaged(path: Path) -> StoreDamaged:
    with pytest.raises(StoreDamaged) as info:
        _check.inspect_file(path)
    assert info.value.path == str(path)
    assert str(info.value) == (f"store {path} is damaged: {info.value.detail}; io will not"
                               " write to it")
    return info.value


def test_each_header_finding_names_the_file(tmp_path: Path) -> None:
    sound = _store(tmp_path / "s.db")
    size = sound.stat().st_size
    cases: dict[str, bytes] = {
        "magic": b"Not SQLite at all" + b"\0" * 200,
        "short": b"SQLite format 3\x00" + b"\0" * 20,
        "odd": sound.read_bytes() + b"\0" * 100,
        "half": sound.read_bytes()[: size // 2 // 4096 * 4096],
    }
    for name, data in cases.items():
        bad = tmp_path / f"{name}.db"
        bad.write_bytes(data)
        _damaged(bad)
    for raw in (b"\x01\x23", b"\x00\x00", b"\x01\x00", b"\x03\x00", b"\x02\x01"):
        page = tmp_path / f"page{raw.hex()}.db"
        image = bytearray(sound.read_bytes())
        image[16:18] = raw
        page.write_bytes(bytes(image))
        error = _damaged(page)
        shown = int.from_bytes(raw, "big")
        assert error.detail == f"its header holds an invalid page size {shown}"


def test_the_smallest_page_size_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "small.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA page_size = 512")
        conn.execute("CREATE TABLE t (x)")
    assert path.read_bytes()[16:18] == b"\x02\x00"
    assert _check._check_header(path, path.stat().st_size) == 512


def test_each_log_finding_names_the_store(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    wal = tmp_path / "s.db-wal"
    for data in (b"\x37\x7f\x06\x82" + b"\0" * 10, b"\0" * 32,
                 _wal_header(4096, good_sum=False), _wal_header(1024)):
        wal.write_bytes(data)
        _damaged(path)
    wal.unlink()
    wal.mkdir()
    with pytest.raises(StoreUnavailable) as info:
        _check.inspect_file(path)
    assert (info.value.path, str(info.value)) == (
        str(path), f"store {path} cannot be used: its log s.db-wal is a directory")


def test_a_log_beside_no_database_names_the_store(tmp_path: Path) -> None:
    (tmp_path / "s.db-wal").write_bytes(b"x")
    error = _damaged(tmp_path / "s.db")
    assert error.detail == ("a write-ahead log s.db-wal lies beside a missing or empty"
                            " database (it belongs to another file)")


def test_a_log_of_one_byte_is_a_log(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    assert _check._has_wal(path) is False
    (tmp_path / "s.db-wal").write_bytes(b"x")
    assert _check._has_wal(path) is True
    (tmp_path / "s.db-wal").write_bytes(b"")
    assert _check._has_wal(path) is False


def test_a_file_that_is_not_regular_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    os.mkfifo(path)
    with pytest.raises(StoreUnavailable) as info:
        _check.inspect_file(path)
    assert str(info.value) == (f"store {path} cannot be used: it is a FIFO, not a regular"
                               " file")


def test_check_store_reports_a_damaged_header_whole(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"Not SQLite at all" + b"\0" * 200)
    report = check_store(bad)
    assert (report.path, report.ok, report.problems, report.size, report.runs) == (
        str(bad), False, ("it is not an io store (not a SQLite database)",), 217, None)
    with pytest.raises(StoreUnavailable) as info:
        check_store(tmp_path / "missing.db")
    assert str(info.value) == f"store {tmp_path / 'missing.db'} cannot be used: no such file"


def test_check_store_reports_a_foreign_log_whole(tmp_path: Path) -> None:
    from tests.unit.store.test_check_faults import _holding_log

    mine = _store(tmp_path / "a.db")
    other = _store(tmp_path / "b.db")
    holder, log = _holding_log(other)
    try:
        (tmp_path / "a.db-wal").write_bytes(log.read_bytes())
        report = check_store(mine)
    finally:
        holder.close()
    assert (report.path, report.ok, report.size, report.runs) == (
        str(mine), False, mine.stat().st_size, None)
    (problem,) = report.problems
    assert problem.startswith("its write-ahead log a.db-wal belongs to another store"
                              " (store_id ")


def test_check_store_of_a_newer_format_reports_it(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db", runs=2)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '8' WHERE key = 'checkpoint_format'")
    conn.commit()
    conn.close()
    report = check_store(path)
    assert (report.ok, report.runs, report.size) == (False, None, path.stat().st_size)
    assert len(report.problems) == 1 and "8" in report.problems[0]

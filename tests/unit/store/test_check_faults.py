"""`inspect_file`, `verify_schema`, `verify_log_owner` and `check_store` in-process, each
fault pinned to its exact finding (the CLI suite in tests/integration/store runs the same
faults through `io`; these kill the mutants of `store/_check.py` that it cannot see)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
from pathlib import Path

import pytest

from harness_core import Message, Store, StoreDamaged, StoreUnavailable, check_store
from harness_core.store import _check


def _store(path: Path, runs: int = 3) -> Path:
    with Store(path) as store:
        for i in range(runs):
            store.create_run(f"r{i}", goal="goal " * 50, workspace="/w", model="m",
                             settings={}, policy={}, sandbox=None,
                             messages=[Message.user("x" * 2000)])
    return path


def _wal_header(page_size: int, *, magic: int = 0x377F0682, good_sum: bool = True) -> bytes:
    head = struct.pack(">6I", magic, 3007000, page_size, 0, 1, 2)
    s0, s1 = _check._wal_checksum(head, magic & 1 == 1)
    if not good_sum:
        s0 ^= 1
    return head + struct.pack(">2I", s0, s1)


def test_a_missing_or_empty_file_is_a_new_store(tmp_path: Path) -> None:
    assert _check.inspect_file(tmp_path / "none.db") == 0
    (tmp_path / "empty.db").write_bytes(b"")
    assert _check.inspect_file(tmp_path / "empty.db") == 0


def test_a_sound_file_reports_its_size(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    assert _check.inspect_file(path) == path.stat().st_size > 0


@pytest.mark.parametrize(("make", "kind"), [
    (lambda p: os.mkfifo(p), "a FIFO"),
    (lambda p: p.mkdir(), "a directory"),
])
def test_a_special_file_is_named_for_what_it_is(tmp_path: Path, make: object,
                                                 kind: str) -> None:
    path = tmp_path / "s.db"
    make(path)  # type: ignore[operator]
    with pytest.raises(StoreUnavailable) as info:
        _check.inspect_file(path)
    assert info.value.reason == f"it is {kind}, not a regular file"
    assert info.value.path == str(path) and "IO_STORE" in (info.value.hint or "")


def test_a_device_and_a_socket_are_named_too() -> None:
    assert _check._kind(os.stat("/dev/null").st_mode) == "a character device"
    assert _check._kind(0o140000) == "a socket"
    assert _check._kind(0o060000) == "a block device"
    assert _check._kind(0o010000) == "a FIFO"
    assert _check._kind(0o040000) == "a directory"
    assert _check._kind(0o100000) == "not a regular file"


def test_header_findings(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    size = path.stat().st_size
    cases = {
        "wrong magic": (b"Not SQLite at all" + b"\0" * 200,
                        "it is not an io store (not a SQLite database)"),
        "short header": (b"SQLite format 3\x00" + b"\0" * 20,
                         "it is truncated (36 bytes, shorter than its header)"),
    }
    for name, (data, detail) in cases.items():
        bad = tmp_path / f"{name}.db"
        bad.write_bytes(data)
        with pytest.raises(StoreDamaged) as info:
            _check.inspect_file(bad)
        assert info.value.detail == detail, name
    odd = tmp_path / "odd.db"
    odd.write_bytes(path.read_bytes() + b"\0" * 100)
    with pytest.raises(StoreDamaged, match=f"{size + 100} bytes is not a whole number of"
                                           " 4096-byte pages"):
        _check.inspect_file(odd)
    half = tmp_path / "half.db"
    half.write_bytes(path.read_bytes()[: size // 2 // 4096 * 4096])
    pages = size // 4096
    with pytest.raises(StoreDamaged, match=f"its header says {pages} pages of 4096 bytes"):
        _check.inspect_file(half)
    for raw, shown in ((b"\x01\x23", "291"), (b"\x00\x00", "0")):
        page = tmp_path / f"page{shown}.db"
        header = bytearray(path.read_bytes())
        header[16:18] = raw
        page.write_bytes(bytes(header))
        with pytest.raises(StoreDamaged, match=f"invalid page size {shown}"):
            _check.inspect_file(page)


def test_a_64k_page_size_is_read_as_65536(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA page_size = 65536")
        conn.execute("CREATE TABLE t (x)")
    assert path.read_bytes()[16:18] == b"\x00\x01"
    assert _check._check_header(path, path.stat().st_size) == 65536


def test_write_ahead_log_findings(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    wal = tmp_path / "s.db-wal"
    cases = [
        (b"\x37\x7f\x06\x82" + b"\0" * 10, "is truncated"),
        (b"\0" * 32, "is not a SQLite log"),
        (_wal_header(4096, good_sum=False), "has a damaged header"),
        (_wal_header(1024), "is of another database (1024-byte pages, the database has 4096)"),
    ]
    for data, problem in cases:
        wal.write_bytes(data)
        with pytest.raises(StoreDamaged) as info:
            _check.inspect_file(path)
        assert info.value.detail == f"its write-ahead log s.db-wal {problem}"
    for magic in (0x377F0682, 0x377F0683):  # either byte order of the checksum is a log
        wal.write_bytes(_wal_header(4096, magic=magic))
        assert _check.inspect_file(path) == path.stat().st_size
    wal.write_bytes(b"")
    assert _check.inspect_file(path) > 0
    wal.unlink()
    wal.mkdir()
    with pytest.raises(StoreUnavailable, match="its log s.db-wal is a directory"):
        _check.inspect_file(path)


def test_a_log_beside_no_database(tmp_path: Path) -> None:
    (tmp_path / "s.db-wal").write_bytes(b"x")
    with pytest.raises(StoreDamaged, match="lies beside a missing or empty database"):
        _check.inspect_file(tmp_path / "s.db")
    (tmp_path / "s.db").write_bytes(b"")
    with pytest.raises(StoreDamaged, match="lies beside a missing or empty database"):
        _check.inspect_file(tmp_path / "s.db")
    (tmp_path / "s.db-wal").write_bytes(b"")
    assert _check.inspect_file(tmp_path / "s.db") == 0


def _holding_log(path: Path) -> tuple[sqlite3.Connection, Path]:
    """A store with an unapplied log: a reader holds the file so nothing checkpoints."""
    holder = sqlite3.connect(path)
    holder.execute("SELECT count(*) FROM runs").fetchone()
    with Store(path) as store:
        store.create_run("late", goal="g", workspace="/w", model="m", settings={}, policy={},
                         sandbox=None, messages=[Message.user("y")])
    return holder, path.with_name(path.name + "-wal")


def test_a_log_of_another_store_is_refused_and_its_own_accepted(tmp_path: Path) -> None:
    mine = _store(tmp_path / "a.db")
    other = _store(tmp_path / "b.db")
    holder, log = _holding_log(other)
    try:
        shutil.copy(log, tmp_path / "a.db-wal")
        conn = sqlite3.connect(_check.readonly_uri(mine), uri=True)
        try:
            with pytest.raises(StoreDamaged, match="a.db-wal belongs to another store"):
                _check.verify_log_owner(conn, mine)
        finally:
            conn.close()
        own = sqlite3.connect(_check.readonly_uri(other), uri=True)
        try:
            _check.verify_log_owner(own, other)  # its own log: accepted
        finally:
            own.close()
        report = check_store(mine)
        assert not report.ok and "belongs to another store" in report.problems[0]
    finally:
        holder.close()


def test_readonly_uri_reads_without_a_log_as_immutable(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    assert _check.readonly_uri(path).endswith("?mode=ro&immutable=1")
    (tmp_path / "s.db-wal").write_bytes(b"")
    assert _check.readonly_uri(path).endswith("?mode=ro")
    assert _check.readonly_uri(path).startswith("file:///")


def test_verify_schema_of_an_empty_database_is_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    sqlite3.connect(path).close()
    conn = sqlite3.connect(path)
    try:
        assert _check.verify_schema(conn, path, expected=7, known=frozenset()) is False
    finally:
        conn.close()


def test_verify_schema_findings(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    conn = sqlite3.connect(path)
    try:
        assert _check.verify_schema(conn, path, expected=7,
                                    known=frozenset(r[0] for r in conn.execute(
                                        "SELECT name FROM migrations"))) is True
        with pytest.raises(StoreDamaged, match="records schema migrations this io does not"
                                               " know \\(0001_core, "):
            _check.verify_schema(conn, path, expected=7, known=frozenset({"0002_handles"}))
        conn.execute("UPDATE meta SET value = '7x' WHERE key = 'checkpoint_format'")
        with pytest.raises(StoreDamaged, match="holds '7x', not a number"):
            _check.verify_schema(conn, path, expected=7, known=frozenset())
    finally:
        conn.close()


def test_quick_check_damage_is_one_line(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db", runs=30)
    with open(path, "r+b") as handle:
        handle.seek(4096 * 5 + 8)
        handle.write(b"\xff" * 64)
    info = path.stat()
    _check._checked.discard((info.st_dev, info.st_ino))
    with pytest.raises(StoreDamaged) as caught:
        Store(path)
    assert caught.value.detail.startswith("quick_check found: On tree page ")
    assert "\n" not in caught.value.detail and "***" not in caught.value.detail
    assert (info.st_dev, info.st_ino) not in _check._checked
    report = check_store(path)
    assert not report.ok and report.runs is None and report.size == info.st_size


def test_one_line_keeps_three_findings_and_counts_the_rest() -> None:
    found = ["*** in database main ***\nOn page 1: a\nOn page 2: b", "On page 3: c",
             "On page 4: d\nOn page 5: e"]
    assert _check._one_line(found) == "On page 1: a; On page 2: b; On page 3: c (and 2 more)"
    assert _check._one_line(["x"]) == "x"


def test_check_store_of_a_sound_store(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db", runs=4)
    report = check_store(path)
    assert report.ok and report.problems == () and report.runs == 4
    assert report.to_json() == {"path": str(path), "ok": True, "problems": [],
                                "size": path.stat().st_size, "runs": 4}
    with pytest.raises(StoreUnavailable, match="no such file"):
        check_store(tmp_path / "missing.db")


def test_a_commit_writes_the_meta_table_page_alone(tmp_path: Path) -> None:
    """Each commit stamps `last_write` in place: one page into the log (the meta table's,
    which holds `store_id`, what the owner check reads), not its key index's page too."""
    path = _store(tmp_path / "a.db")
    holder = sqlite3.connect(path)
    holder.execute("SELECT count(*) FROM runs").fetchone()  # nothing checkpoints the log
    try:
        with Store(path) as store:
            log = path.with_name("a.db-wal")
            page = store._query("PRAGMA page_size")[0][0]
            with store._tx():
                pass
            before = log.stat().st_size
            with store._tx():
                pass  # only the stamp
            assert log.stat().st_size - before == 24 + page  # one frame: one page
            rowid = store._query("SELECT rowid FROM meta WHERE key = 'last_write'")
            with store._tx():
                pass
            assert store._query("SELECT rowid FROM meta WHERE key = 'last_write'") == rowid
    finally:
        holder.close()


def test_a_foreign_log_is_refused_when_the_stores_meta_rows_differ_in_order(
        tmp_path: Path) -> None:
    path = _store(tmp_path / "a.db")
    # Another store whose meta rows sit at other rowids (its store_id came later).
    other = tmp_path / "b.db"
    with Store(other) as store, store._tx() as conn:
        (old,) = store._query("SELECT value FROM meta WHERE key = 'store_id'")[0]
        conn.execute("DELETE FROM meta WHERE key = 'store_id'")
        conn.execute("INSERT INTO meta(key, value) VALUES ('filler', 'x')")
        conn.execute("INSERT INTO meta(key, value) VALUES ('store_id', ?)", (old,))
    holder, log = _holding_log(other)
    try:
        shutil.copy(log, tmp_path / "a.db-wal")
        with pytest.raises(StoreDamaged):
            Store(path)
        assert not check_store(path).ok
    finally:
        holder.close()

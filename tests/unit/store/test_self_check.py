"""The store's self-check on open: what it refuses (typed errors, never ValueError),
the `quick_check` done once per file per process within its time budget (when the
store was not closed cleanly: tests/unit/store/test_clean_close.py), and a
store that is up to date is not written when opened."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from harness_core import CheckpointFormatError, Message, Store, StoreDamaged, StoreUnavailable
from harness_core.store import _check


def _store(path: Path, runs: int = 1) -> Path:
    with Store(path) as store:
        for i in range(runs):
            store.create_run(f"r{i + 1}", goal="g", workspace="/w", model="m", settings={},
                             policy={}, sandbox=None, messages=[Message.user("hi")])
    return path


def _set_format(path: Path, value: str | None) -> None:
    with sqlite3.connect(path) as conn:
        if value is None:
            conn.execute("DELETE FROM meta WHERE key = 'checkpoint_format'")
        else:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'checkpoint_format'", (value,))


def test_a_garbage_format_row_is_a_typed_error(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    _set_format(path, "garbage")
    with pytest.raises(StoreDamaged, match="checkpoint_format row holds 'garbage'") as info:
        Store(path)
    assert info.value.path == str(path) and "io store check" in (info.value.hint or "")


def test_a_missing_format_row_is_refused_not_rewritten(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    _set_format(path, None)
    with pytest.raises(StoreDamaged, match="checkpoint_format row is missing"):
        Store(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM meta WHERE key = 'checkpoint_format'"
                            ).fetchone()[0] == 0


def test_another_format_number_is_a_checkpoint_format_error(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    _set_format(path, "6")
    with pytest.raises(CheckpointFormatError):
        Store(path)


def test_a_migration_from_a_newer_io_is_refused(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO migrations(name, applied_at) VALUES ('0999_future', 'x')")
    with pytest.raises(StoreDamaged, match="0999_future"):
        Store(path)


def test_an_sqlite_file_that_is_not_an_io_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (x)")
    with pytest.raises(StoreDamaged, match="not an io store"):
        Store(path)


def test_a_fifo_store_path_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "s.db")
    with pytest.raises(StoreUnavailable, match="a FIFO"):
        Store(tmp_path / "s.db")


def test_a_log_beside_a_missing_database_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s.db-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\0" * 28)
    with pytest.raises(StoreDamaged, match="write-ahead log"):
        Store(tmp_path / "s.db")


def test_a_log_with_a_damaged_header_is_refused(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    (tmp_path / "s.db-wal").write_bytes(b"\x37\x7f\x06\x82" + os.urandom(60))
    with pytest.raises(StoreDamaged, match="damaged header"):
        Store(path)


def test_an_up_to_date_store_is_not_written_when_opened(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with Store(path) as store:
        assert [r.run_id for r in store.list_runs()] == ["r1"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_quick_check_runs_once_per_file_per_process(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    (tmp_path / "s.db-clean").unlink()  # no clean-close fingerprint: the open checks
    info = path.stat()
    _check._checked.discard((info.st_dev, info.st_ino))
    Store(path).close()
    assert (info.st_dev, info.st_ino) in _check._checked


def test_quick_check_over_its_budget_is_not_a_finding(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = _store(tmp_path / "s.db", runs=50)
    (tmp_path / "s.db-clean").unlink()
    info = path.stat()
    _check._checked.discard((info.st_dev, info.st_ino))
    monkeypatch.setattr(_check, "QUICK_CHECK_SECONDS", -1.0)  # every check is over budget
    Store(path).close()
    assert (info.st_dev, info.st_ino) not in _check._checked  # not counted as checked


def test_a_new_store_gets_an_identity(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    with sqlite3.connect(path) as conn:
        (value,) = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
    assert len(value) == 32

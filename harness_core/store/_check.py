"""The store's self-check: what `Store` verifies before it writes, and `io store check`.

On open, before any connection that could write, the file is looked at cheaply: it
must be a regular file (a FIFO, a directory or a device is refused by `stat`, which
never blocks), start with the SQLite header, be as long as that header says, and any
write-ahead log beside it must be a log of this database. Then a read-only connection
checks the schema: the ``checkpoint_format`` row must be there and hold this version's
number, and every recorded migration must be one this version knows. ``PRAGMA
quick_check``, which reads the whole file, runs only when the store was not closed
cleanly since (see `harness_core.store._clean`), at most once per file per process,
within `QUICK_CHECK_SECONDS`; a check cut short by the budget counts as passed (the
full check is `check_store`).

A file that fails is never opened for writing: the caller gets `StoreDamaged` (or
`StoreUnavailable` for a path that is not a regular file) and the bytes stay as they
were. This module never writes to a store.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import struct
import time
from dataclasses import field
from pathlib import Path

from harness_core._held_files import opening
from harness_core._record import record
from harness_core.errors import CheckpointFormatError, StoreDamaged, StoreUnavailable

__all__ = [
    "QUICK_CHECK_SECONDS", "StoreReport", "check_store", "inspect_file",
    "readonly_uri",
    "verify_log_owner", "verify_schema",
]

QUICK_CHECK_SECONDS = 0.5
"""Time `quick_check` may take on open; a 50 MB store checks in about 0.1 s here."""

_MAGIC = b"SQLite format 3\x00"
_WAL_MAGICS = (0x377F0682, 0x377F0683)
_HEADER = 100
_checked: set[tuple[int, int]] = set()
"""(device, inode) of the files whose quick_check already passed in this process."""


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def inspect_file(path: Path) -> int:
    """Check the file's kind, header and write-ahead log without opening it for writing.

    Returns:
        Its size in bytes (0 when it does not exist yet or is empty: a new store).

    Raises:
        StoreUnavailable: The path (or its log) is not a regular file.
        StoreDamaged: Not SQLite, truncated, or a log that is not this database's.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        _refuse_wal_without_database(path)
        return 0
    except OSError as exc:
        raise StoreUnavailable(str(path), exc.strerror or str(exc)) from exc
    if not stat.S_ISREG(info.st_mode):
        raise StoreUnavailable(
            str(path), f"it is {_kind(info.st_mode)}, not a regular file",
            hint="point IO_STORE or [store] path at a regular file (or a path that does"
                 " not exist yet)")
    if info.st_size == 0:
        _refuse_wal_without_database(path)
        return 0
    page_size = _check_header(path, info.st_size)
    _check_wal(path, page_size)
    return info.st_size


def _read_head(path: Path, count: int) -> bytes:
    # O_NONBLOCK: the file may have been swapped for a FIFO since the stat.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise StoreUnavailable(str(path), exc.strerror or str(exc)) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreUnavailable(str(path), "it is not a regular file")
        return os.read(fd, count)
    except OSError as exc:
        raise StoreUnavailable(str(path), exc.strerror or str(exc)) from exc
    finally:
        os.close(fd)


def _check_header(path: Path, size: int) -> int:
    head = _read_head(path, _HEADER)
    if not head.startswith(_MAGIC):
        raise StoreDamaged(str(path), "it is not an io store (not a SQLite database)")
    if len(head) < _HEADER:
        raise StoreDamaged(str(path), f"it is truncated ({size} bytes, shorter than its header)")
    raw_page = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if raw_page == 1 else raw_page
    if page_size < 512 or page_size & (page_size - 1):
        raise StoreDamaged(str(path), f"its header holds an invalid page size {raw_page}")
    pages, change, valid_for = (struct.unpack(">I", head[o:o + 4])[0] for o in (28, 24, 92))
    if size % page_size:
        raise StoreDamaged(str(path), f"it is truncated ({size} bytes is not a whole number"
                                      f" of {page_size}-byte pages)")
    if change == valid_for and pages and size < pages * page_size and not _has_wal(path):
        # With a log beside it the header may run ahead of the file for a moment: a
        # checkpoint writes page 1 (the new size) before the pages that extend the file,
        # and readers take those pages from the log meanwhile. Only a file without a
        # log must be as long as its header says.
        raise StoreDamaged(str(path), f"it is truncated ({size} bytes; its header says"
                                      f" {pages} pages of {page_size} bytes)")
    return page_size


def _has_wal(path: Path) -> bool:
    try:
        return os.stat(_wal_path(path)).st_size > 0
    except OSError:
        return False


def _wal_path(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def _refuse_wal_without_database(path: Path) -> None:
    wal = _wal_path(path)
    try:
        size = os.stat(wal).st_size
    except OSError:
        return
    if size:
        raise StoreDamaged(str(path), f"a write-ahead log {wal.name} lies beside a missing or"
                                      " empty database (it belongs to another file)")


def _wal_checksum(data: bytes, big_endian: bool) -> tuple[int, int]:
    words = struct.unpack((">" if big_endian else "<") + f"{len(data) // 4}I", data)
    s0 = s1 = 0
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def _check_wal(path: Path, page_size: int) -> None:
    wal = _wal_path(path)
    try:
        info = os.stat(wal)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreUnavailable(str(path), f"its log {wal.name}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise StoreUnavailable(str(path), f"its log {wal.name} is {_kind(info.st_mode)}")
    if info.st_size == 0:
        return
    head = _read_head(wal, 32)
    problem = _wal_problem(head, page_size)
    if problem is not None:
        raise StoreDamaged(str(path), f"its write-ahead log {wal.name} {problem}")


def _wal_problem(head: bytes, page_size: int) -> str | None:
    if len(head) < 32:
        return "is truncated"
    magic, _version, wal_page, _seq, _s1, _s2, c0, c1 = struct.unpack(">8I", head)
    if magic not in _WAL_MAGICS:
        return "is not a SQLite log"
    if _wal_checksum(head[:24], magic & 1 == 1) != (c0, c1):
        return "has a damaged header"
    if wal_page != page_size:
        return f"is of another database ({wal_page}-byte pages, the database has {page_size})"
    return None


def verify_schema(conn: sqlite3.Connection, path: Path, *, expected: int,
                  known: frozenset[str], quick: bool = True) -> bool:
    """Check an existing store through a read-only connection.

    Args:
        quick: Run ``PRAGMA quick_check`` too (once per file per process): after an
            unclean close, or a change no io made (`harness_core.store._clean`).

    Returns:
        Whether the store already holds io's tables (False: an empty SQLite file).

    Raises:
        StoreDamaged: A missing or garbled format row, or `quick_check` found damage.
        CheckpointFormatError: The format row holds another version's number.
        sqlite3.Error: The file could not be read (the caller translates it).
    """
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if quick:
        _quick_check(conn, path)
    if not tables:
        return False
    if "meta" not in tables:
        raise StoreDamaged(str(path), "it is a SQLite database but not an io store (no meta"
                                      " table)")
    row = conn.execute("SELECT value FROM meta WHERE key = 'checkpoint_format'").fetchone()
    if row is None:
        raise StoreDamaged(str(path), "its checkpoint_format row is missing")
    value = str(row[0])
    if not value.isdigit():
        raise StoreDamaged(str(path), f"its checkpoint_format row holds {value[:40]!r}, not a"
                                      " number")
    if int(value) != expected:
        raise CheckpointFormatError(int(value), expected)
    if "migrations" in tables:
        unknown = sorted({r[0] for r in conn.execute("SELECT name FROM migrations")} - known)
        if unknown:
            raise StoreDamaged(str(path), f"it records schema migrations this io does not know"
                                          f" ({', '.join(unknown)}): a newer io wrote it")
    return True


def readonly_uri(path: Path) -> str:
    """A URI that opens `path` without writing anything beside it.

    Without a log beside it no process has the store open (SQLite keeps the log while
    any connection lives), so it is read as immutable: a check then makes no -wal or
    -shm file beside a store it may refuse. With a log, a plain read-only open reads it.
    """
    quiet = "" if _wal_path(path).exists() else "&immutable=1"
    return f"{path.resolve().as_uri()}?mode=ro{quiet}"


def verify_log_owner(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a write-ahead log that belongs to another store.

    Every io commit rewrites the meta page, which holds the store's random
    ``store_id``, so a log written for this file shows the same id as the file alone;
    a log copied beside another store shows a different one. `conn` sees file + log;
    the file alone is read with ``immutable=1``, which ignores the log.

    Raises:
        StoreDamaged: The log's store_id is not the file's.
        sqlite3.Error: The file could not be read.
    """
    wal = _wal_path(path)
    if not wal.exists() or os.stat(wal).st_size == 0:
        return
    alone = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        mine = _store_id(alone)
    except sqlite3.DatabaseError:
        # The file alone names pages only its log holds: no checkpoint has reached the
        # file yet (a full disk refused it, or `kill -9` came first). The file has no
        # store_id of its own to compare, as when its tables are all in the log.
        mine = None
    finally:
        alone.close()
    logged = _store_id(conn)
    if mine is not None and logged is not None and mine != logged:
        raise StoreDamaged(str(path), f"its write-ahead log {wal.name} belongs to another store"
                                      f" (store_id {logged[:8]}…, the file is {mine[:8]}…)")


def _store_id(conn: sqlite3.Connection) -> str | None:
    try:
        # The table's own page (which every commit writes into the log), not through
        # the key's index: a commit does not rewrite the index's page.
        row = conn.execute(
            "SELECT value FROM meta NOT INDEXED WHERE key = 'store_id'").fetchone()
    except sqlite3.OperationalError:
        return None  # no meta table in this view (a store whose tables are all in the log)
    return str(row[0]) if row is not None else None


def _quick_check(conn: sqlite3.Connection, path: Path) -> None:
    info = os.stat(path)
    key = (info.st_dev, info.st_ino)
    if key in _checked:
        return
    deadline = time.monotonic() + QUICK_CHECK_SECONDS
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
    try:
        rows = conn.execute("PRAGMA quick_check(5)").fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupt" not in str(exc):
            raise
        return  # over budget: not a finding (the full check is `io store check`)
    finally:
        conn.set_progress_handler(None, 0)
    found = [str(r[0]) for r in rows]
    if found != ["ok"]:
        raise StoreDamaged(str(path), f"quick_check found: {_one_line(found)}")
    _checked.add(key)


def _one_line(found: list[str]) -> str:
    lines = [line.strip() for text in found for line in text.splitlines()]
    kept = [line for line in lines if line and not line.startswith("***")]
    text = "; ".join(kept[:3]) + (f" (and {len(kept) - 3} more)" if len(kept) > 3 else "")
    return text[:300]


@record
class StoreReport:
    """What `check_store` found.

    Attributes:
        path: The store file.
        ok: Every check passed.
        problems: One line per problem found (empty when ok).
        size: The file's size in bytes.
        runs: How many runs it records (None when it could not be read).
    """

    path: str
    ok: bool
    problems: tuple[str, ...] = field(default_factory=tuple)
    size: int = 0
    runs: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "ok": self.ok, "problems": list(self.problems),
                "size": self.size, "runs": self.runs}


def check_store(path: str | os.PathLike[str], *, expected: int,
                known: frozenset[str]) -> StoreReport:
    """The full check `io store check` runs: the open checks and ``PRAGMA
    integrity_check``, read-only; the file is never written.

    Raises:
        StoreUnavailable: The path does not exist or is not a regular file.
    """
    target = Path(path)
    if not target.exists() and not target.is_symlink():
        raise StoreUnavailable(str(target), "no such file")
    with opening(target) as this:
        # A store this process holds open: its header reads would drop the locks
        # (`harness_core._held_files`); SQLite's own checks below still run.
        try:
            size = _size(target) if this.held else inspect_file(target)
        except StoreDamaged as exc:
            return StoreReport(str(target), False, (exc.detail,), _size(target))
    problems: list[str] = []
    runs: int | None = None
    try:
        conn = sqlite3.connect(readonly_uri(target), uri=True)
    except sqlite3.Error as exc:
        return StoreReport(str(target), False, (f"cannot open it: {exc}",), size)
    try:
        verify_log_owner(conn, target)
        found = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(50)")]
        problems.extend(line.strip() for text in found if text != "ok"
                        for line in text.splitlines() if line.strip())
        if not problems:
            verify_schema(conn, target, expected=expected, known=known, quick=False)
            runs = _count_runs(conn)
    except (StoreDamaged, CheckpointFormatError) as exc:
        problems.append(exc.detail if isinstance(exc, StoreDamaged) else str(exc))
    except sqlite3.Error as exc:
        problems.append(str(exc))
    finally:
        conn.close()
    return StoreReport(str(target), not problems, tuple(problems), size, runs)


def _count_runs(conn: sqlite3.Connection) -> int | None:
    try:
        return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
    except sqlite3.Error:
        return None


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0

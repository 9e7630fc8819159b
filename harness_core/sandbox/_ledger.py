"""The process ledger: what each `io` process has running, so a later `io` can end it.

A run's commands die with it when `io` ends normally. After `kill -9` of `io` nothing
runs its clean-up, so every `io` that starts commands keeps a ledger file (one per
process, in a private per-user directory) naming itself (pid and start time), the runs
it drove, a random token, and each live command: its pid with start time (the process
group it leads has the same id) and its cgroup. Every command's environment carries the
token (`TOKEN_VARIABLE`), which its descendants inherit.

`sweep` (called when an `io` command opens the store) reads the ledgers of `io`
processes that are gone (pid dead, or alive with another start time) and kills, never
touching a reused pid:

- every member of each recorded cgroup (only commands of that run were ever put there),
  then removes the cgroup;
- each recorded process whose start time still matches, and the members of its process
  group (a group id is not reused while the group has members);
- every process of this user whose environment holds the dead owner's token and that
  started after the owner: a descendant that left the process group (`setsid`), even
  without a cgroup.

What survives: a descendant that cleared its environment and left its group and has no
cgroup (the floor on a host without a writable pids cgroup).

The ledger also names the placeholders the native backend made in a workspace (see
`_placeholders`); a sweep removes those of a dead `io` that are still the ones it made
and still empty, whichever store it was asked about.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from harness_core.sandbox._started import process_started as _started
from harness_core.sandbox._started import started_between

__all__ = ["TOKEN_VARIABLE", "Ledger", "Swept", "activate_ledger", "current_ledger", "sweep"]

TOKEN_VARIABLE = "IO_RUN_TOKEN"
"""Set in every command's environment: the token of the `io` process that started it."""

_SLACK = 0.05
"""Seconds two readings of one process's start time may differ by."""


def ledger_folder() -> Path:
    """The per-user directory of ledger files (created 0700 when missing)."""
    folder = Path(tempfile.gettempdir()) / f"io-ledger-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.getuid() or not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o077:
        # Someone else made it (or made it open to others): use a fresh private one.
        folder = Path(tempfile.mkdtemp(prefix=f"io-ledger-{os.getuid()}-"))
    return folder


@dataclass
class Ledger:
    """This process's ledger file, kept as JSON lines that are only ever appended.

    The first line names the owner (pid, start time, token); later lines add a run, add
    a command or remove one. Appending a line costs one `write` (a rewrite and rename
    per command measured about 4 ms each on a loaded disk, twice per command). A line
    torn by `kill -9` is the last one and is ignored by the reader; nothing before it
    can be torn. Past `_COMPACT_AFTER` lines the file is rewritten to its live state.
    """

    folder: Path
    token: str = field(default_factory=lambda: secrets.token_hex(12))
    runs: list[str] = field(default_factory=lambda: [])
    stores: list[str] = field(default_factory=lambda: [])
    placeholders: dict[str, dict[str, Any]] = field(default_factory=lambda: {})
    _entries: dict[int, dict[str, Any]] = field(default_factory=lambda: {})
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _lines: int = 0
    _fd: tuple[int, int] | None = None  # the kept file and the pid that opened it

    @property
    def path(self) -> Path:
        return self.folder / f"io-{os.getpid()}.json"

    def _header(self) -> dict[str, Any]:
        return {"owner_pid": os.getpid(), "owner_started": _started(os.getpid()),
                "token": self.token}

    def _append(self, record: dict[str, Any]) -> None:
        if self._lines >= _COMPACT_AFTER:
            self._compact()
        with contextlib.suppress(OSError):
            fd = self._file()
            text = json.dumps(record) + "\n"
            if self._lines == 0 or os.fstat(fd).st_size == 0:
                # A new file: this process's first line, a forked child's first line
                # (its pid names another file), or after the file was removed. Lines
                # without the owner line above them could never be swept.
                text = json.dumps(self._header()) + "\n" + text
                self._lines = 1
            os.write(fd, text.encode())
            self._lines += 1

    def _file(self) -> int:
        """The ledger file, kept open for appends (an open, seek and close per line were
        most of an append's cost); opened again once removed or replaced, or in a fork."""
        if self._fd is not None:
            fd, owner = self._fd
            if owner == os.getpid() and os.fstat(fd).st_nlink > 0:
                return fd
            self.close_file()
        # Not inherited by commands (PEP 446); binary, so Windows writes "\n" as given.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        self._fd = (os.open(self.path, flags, 0o600), os.getpid())
        return self._fd[0]

    def close_file(self) -> None:
        """Close the kept file (before it is replaced or removed: Windows refuses both
        while it is open; a forked child closes its own copy)."""
        fd, self._fd = (self._fd[0] if self._fd else None), None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _compact(self) -> None:
        lines = [self._header(), *({"run": r} for r in self.runs),
                 *({"store": s} for s in self.stores),
                 *({"placeholder": p} for p in self.placeholders.values()),
                 *({"add": e} for e in self._entries.values())]
        scratch = self.path.with_suffix(".tmp")
        self.close_file()
        with contextlib.suppress(OSError):
            scratch.write_text("".join(json.dumps(line) + "\n" for line in lines))
            os.replace(scratch, self.path)
            self._lines = len(lines)

    def note_run(self, run_id: str, store: str) -> None:
        """Name a run this process drives and its store (what a sweep records against)."""
        with self._lock:
            if run_id not in self.runs:
                self.runs.append(run_id)
                self._append({"run": run_id})
            if store not in self.stores:
                self.stores.append(store)
                self._append({"store": store})

    def note_placeholder(self, path: Path, device: int, inode: int) -> None:
        """Record a placeholder this process made (see `_placeholders`)."""
        record = {"path": str(path), "device": device, "inode": inode}
        with self._lock:
            self.placeholders[str(path)] = record
            self._append({"placeholder": record})

    def forget_placeholder(self, path: Path) -> None:
        """A placeholder was removed (or is no longer io's to remove)."""
        with self._lock:
            if self.placeholders.pop(str(path), None) is not None:
                self._append({"released": str(path)})

    def add(self, pid: int, cgroup: Path | None, *,
            spawned: tuple[int | None, int | None] = (None, None)) -> None:
        """Record a command just started (a session leader: its group id is `pid`);
        `spawned` holds `spawn_clock()` read just before and after starting it."""
        entry = {"pid": pid, "started": started_between(pid, *spawned),
                 "cgroup": str(cgroup) if cgroup else None}
        with self._lock:
            self._entries[pid] = entry
            self._append({"add": entry})

    def remove(self, pid: int) -> None:
        """Forget a command that was killed and reaped."""
        with self._lock:
            if self._entries.pop(pid, None) is not None:
                self._append({"remove": pid})


_COMPACT_AFTER = 4096
"""Lines after which a ledger is rewritten to its live state (one long-lived io)."""


def read_ledger(text: str) -> dict[str, Any] | None:
    """The state a ledger file's lines describe, or None when it has no owner line."""
    data: dict[str, Any] | None = None
    state: dict[str, Any] = {"runs": [], "stores": [], "entries": {}, "placeholders": {}}
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the torn last line of a killed writer
        if not isinstance(record, dict):
            continue
        if "owner_pid" in record and "entries" in record:
            return record  # a whole-file ledger written by an earlier io
        if "owner_pid" in record:
            data = record
        else:
            _apply(record, state)
    if data is None:
        return None
    return {**data, "runs": state["runs"], "stores": state["stores"],
            "entries": list(state["entries"].values()),
            "placeholders": list(state["placeholders"].values())}


def _apply(record: dict[str, Any], state: dict[str, Any]) -> None:
    """Fold one line after the owner line into `state`."""
    for key in ("run", "store"):
        value = record.get(key)
        if isinstance(value, str) and value not in state[key + "s"]:
            state[key + "s"].append(value)
    added, placeholder = record.get("add"), record.get("placeholder")
    if isinstance(added, dict) and "pid" in added:
        state["entries"][int(added["pid"])] = added
    elif isinstance(record.get("remove"), int):
        state["entries"].pop(record["remove"], None)
    elif isinstance(placeholder, dict) and isinstance(placeholder.get("path"), str):
        state["placeholders"][placeholder["path"]] = placeholder
    elif isinstance(record.get("released"), str):
        state["placeholders"].pop(record["released"], None)


_active: Ledger | None = None
_active_lock = threading.Lock()


def activate_ledger(folder: Path | None = None) -> Ledger:
    """Start (once per process) keeping this process's ledger."""
    global _active
    with _active_lock:
        if _active is None:
            _active = Ledger(folder or ledger_folder())
            atexit.register(_discard, _active)
        return _active


def _discard(ledger: Ledger) -> None:
    ledger.close_file()
    with contextlib.suppress(OSError):
        ledger.path.unlink()


def current_ledger() -> Ledger | None:
    """The active ledger, or None when this process keeps none (library use)."""
    return _active


@dataclass(frozen=True)
class Swept:
    """What one sweep killed for one dead `io` process."""

    owner_pid: int
    runs: tuple[str, ...]
    killed: tuple[dict[str, Any], ...]
    removed: tuple[str, ...] = ()
    """Placeholders it left in a workspace that were removed (see `_placeholders`)."""


def _same(pid: int, started: float | None) -> psutil.Process | None:
    try:
        process = psutil.Process(pid)
        if started is not None and abs(process.create_time() - started) <= _SLACK:
            return process
    except psutil.Error:
        pass
    return None


def _describe(process: psutil.Process, why: str) -> dict[str, Any]:
    try:
        name = process.name()
    except psutil.Error:
        name = "?"
    return {"pid": process.pid, "name": name, "why": why}


def _kill(process: psutil.Process, why: str, out: list[dict[str, Any]]) -> None:
    if any(k["pid"] == process.pid for k in out):
        return
    with contextlib.suppress(psutil.Error):
        process.kill()
        out.append(_describe(process, why))


def _kill_cgroup(path: Path, out: list[dict[str, Any]]) -> None:
    with contextlib.suppress(OSError):  # a sandbox's cgroup holds its commands' cgroups
        for inner in path.iterdir():
            if inner.is_dir():
                _kill_cgroup(inner, out)
    procs = path / "cgroup.procs"
    for _ in range(100):
        try:
            pids = [int(x) for x in procs.read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(psutil.Error):
                _kill(psutil.Process(pid), f"member of {path.name}", out)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        path.rmdir()


def _group(pgid: int, owner_started: float) -> Iterator[psutil.Process]:
    for process in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getpgid(process.pid) == pgid and process.create_time() >= owner_started:
                yield process


def _tokened(token: str, owner_started: float) -> Iterator[psutil.Process]:
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    for process in psutil.process_iter():
        try:
            if process.create_time() < owner_started:
                continue
            with open(f"/proc/{process.pid}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    yield process
        except (OSError, psutil.Error):
            continue


def _sweep_one(data: dict[str, Any]) -> list[dict[str, Any]]:
    owner_started = float(data.get("owner_started") or 0.0)
    killed: list[dict[str, Any]] = []
    for entry in data.get("entries", []):
        if entry.get("cgroup"):
            _kill_cgroup(Path(entry["cgroup"]), killed)
        leader = _same(int(entry["pid"]), entry.get("started"))
        if leader is not None:
            _kill(leader, "command", killed)
        if leader is not None or not psutil.pid_exists(int(entry["pid"])):
            for member in _group(int(entry["pid"]), owner_started):
                _kill(member, "process group", killed)
    token = data.get("token")
    if isinstance(token, str) and token:
        for process in _tokened(token, owner_started):
            _kill(process, f"descendant ({TOKEN_VARIABLE})", killed)
    return killed


def _owner_gone(data: dict[str, Any]) -> bool:
    pid = int(data.get("owner_pid", 0))
    if pid == os.getpid():
        return False
    return _same(pid, data.get("owner_started")) is None


def _stores_gone(stores: list[Any]) -> bool:
    """Whether every store a ledger names is a SQLite file that no longer exists.

    Such a ledger's leftovers are swept by whichever store is opened next: no later `io`
    could open its own store to record them, and left alone the file was read by every
    `io` start on the machine for good (a removed test store's, typically).
    """
    return all(isinstance(name, str) and os.path.isabs(name) and not os.path.lexists(name)
               for name in stores)


def _drop_ownerless(path: Path) -> None:
    """Remove a ledger without an owner line once the pid its name gives is gone.

    Such files were left by processes that appended to a ledger whose first line they
    had not written (a forked child, or after the file was removed); nothing in one can
    be matched to its owner's start time, so nothing is killed on its word. Left in
    place they were read again by every later `io` (hundreds on a test machine: tens of
    milliseconds of every start-up).
    """
    try:
        pid = int(path.stem.removeprefix("io-"))
    except ValueError:
        return
    if pid != os.getpid() and not psutil.pid_exists(pid):
        with contextlib.suppress(OSError):
            path.unlink()


def sweep(
    folder: Path | None = None,
    *,
    store: str | None = None,
    record: Callable[[Swept], None] | None = None,
) -> list[Swept]:
    """Kill what dead `io` processes left running; remove their ledgers.

    Args:
        folder: The ledger directory (default: this user's).
        store: Only ledgers of processes that drove runs in this store (or no run at
            all) are swept; None sweeps every ledger.
        record: Called with each non-empty result before its ledger is removed.

    Returns:
        One entry per dead `io` process that had commands or placeholders left.
    """
    folder = folder or ledger_folder()
    out: list[Swept] = []
    for path in sorted(folder.glob("io-*.json")):
        try:
            data = read_ledger(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if data is None:
            _drop_ownerless(path)
            continue
        if not _owner_gone(data):
            continue
        removed = _remove_placeholders(path, data)
        stores = data.get("stores") or []
        if (store is not None and stores and store not in stores and data.get("entries")
                and not _stores_gone(stores)):
            if removed:  # the commands wait for their store; the placeholders are done
                out.append(Swept(int(data.get("owner_pid", 0)), (), (), removed))
            continue  # commands of another store's runs: that store records their sweep
        killed = _sweep_one(data)
        if killed or removed:
            swept = Swept(int(data.get("owner_pid", 0)), tuple(data.get("runs", [])),
                          tuple(killed), removed)
            if record is not None and killed:
                record(swept)
            out.append(swept)
        with contextlib.suppress(OSError):
            path.unlink()
    return out


def _remove_placeholders(path: Path, data: dict[str, Any]) -> tuple[str, ...]:
    """Remove a dead `io`'s placeholders that are untouched; note each in its ledger so
    no later sweep looks at them again."""
    records = data.get("placeholders") or []
    if not records:
        return ()
    from harness_core.sandbox._placeholders import remove_recorded  # it imports this module

    removed = remove_recorded(records)
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps({"released": str(r.get("path"))}) + "\n"
                             for r in records))
    return tuple(removed)

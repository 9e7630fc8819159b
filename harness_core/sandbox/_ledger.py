"""The process ledger: what each `io` process has running, so a later `io` can end it.

A run's commands die with it when `io` ends normally. After `kill -9` of `io` nothing
runs its clean-up, so every `io` that starts commands keeps a ledger file (one per
process, in a private per-user directory) naming itself (pid and start time), the runs
it drove, a random token, and each live command: its pid with start time (it leads its
own session and process group, whose ids are its pid) and its cgroup. Every command's
environment carries the token (`TOKEN_VARIABLE`), which its descendants inherit. A
descendant seen while its command line runs that left the command's session or group
(`setsid`, `setpgid`) is added too, with its start time, group and session
(`note_seen`), so it can be named even after it cleared its environment.

The ledger also names the placeholders the native backend made in a workspace (see
`_placeholders`), and each temporary file a workspace write has open (see
`Workspace.write_bytes`: a `kill -9` mid-write leaves it beside its target). What a later `io` does with a dead owner's ledger is `_sweep`'s job;
this module only writes and reads the file.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import stat
import tempfile
import threading
import time
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_core._record import record
from harness_core.sandbox._started import process_started as _started
from harness_core.sandbox._started import started_between

if TYPE_CHECKING:
    import psutil
else:
    from harness_core._lazy import psutil  # imported on its first use

__all__ = ["TOKEN_VARIABLE", "Ledger", "activate_ledger", "current_ledger", "ledger_folder",
           "note_escapee", "note_escapees", "read_ledger"]

TOKEN_VARIABLE = "IO_RUN_TOKEN"
"""Set in every command's environment: the token of the `io` process that started it."""

def ledger_folder() -> Path:
    """The per-user directory of ledger files (created 0700 when missing)."""
    folder = Path(tempfile.gettempdir()) / f"io-ledger-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.getuid() or not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o077:
        # Someone else made it (or made it open to others): use a fresh private one.
        folder = Path(tempfile.mkdtemp(prefix=f"io-ledger-{os.getuid()}-"))
    return folder


@record(frozen=False)
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
    temporaries: dict[str, dict[str, str]] = field(default_factory=lambda: {})
    _seen: dict[int, dict[str, Any]] = field(default_factory=lambda: {})
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
                 *({"temporary": t} for t in self.temporaries.values()),
                 *({"add": e} for e in self._entries.values()),
                 *({"seen": e} for e in self._seen.values())]
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

    def announce_placeholder(self, path: Path, *, is_dir: bool) -> None:
        """Record a placeholder this process is about to make, before it exists: a
        `kill -9` between the making and `note_placeholder` must not leave it unnamed."""
        record = {"path": str(path), "kind": "dir" if is_dir else "file",
                  "announced": time.time_ns()}
        with self._lock:
            self.placeholders[str(path)] = record
            self._append({"placeholder": record})

    def note_placeholder(self, path: Path, identity: tuple[int, int, int]) -> None:
        """Record a placeholder this process made: its device, inode and change time."""
        record = {"path": str(path), "device": identity[0], "inode": identity[1],
                  "changed": identity[2]}
        with self._lock:
            self.placeholders[str(path)] = record
            self._append({"placeholder": record})

    def note_temporary(self, root: Path, path: str) -> None:
        """A workspace write is about to make the temporary file `path` under `root`."""
        record = {"root": str(root), "path": path}
        with self._lock:
            self.temporaries[f"{root}\0{path}"] = record
            self._append({"temporary": record})

    def forget_temporary(self, root: Path, path: str) -> None:
        """That write has renamed its temporary file over the target, or discarded it."""
        with self._lock:
            if self.temporaries.pop(f"{root}\0{path}", None) is not None:
                self._append({"renamed": {"root": str(root), "path": path}})

    def forget_placeholder(self, path: Path) -> None:
        """A placeholder was removed (or is no longer io's to remove)."""
        with self._lock:
            if self.placeholders.pop(str(path), None) is not None:
                self._append({"released": str(path)})

    def add(self, pid: int, cgroup: Path | None, *,
            spawned: tuple[int | None, int | None] = (None, None),
            started: float | None = None) -> None:
        """Record a command just started (a session leader: its group id is `pid`);
        `spawned` holds `spawn_clock()` read just before and after starting it, or
        `started` its start time read earlier (a resident sandbox's spare, before it
        became the command)."""
        if started is None:
            started = started_between(pid, *spawned)
        entry = {"pid": pid, "started": started,
                 "cgroup": str(cgroup) if cgroup else None, **_group_and_session(pid)}
        with self._lock:
            self._entries[pid] = entry
            self._append({"add": entry})

    def remove(self, pid: int) -> None:
        """Forget a command that was killed and reaped (and the escapees seen under it)."""
        with self._lock:
            for seen in [p for p, e in self._seen.items() if e.get("of") == pid]:
                del self._seen[seen]
            if self._entries.pop(pid, None) is not None:
                self._append({"remove": pid})

    def note_seen(self, of: int, pid: int, started: float) -> None:
        """Record a descendant of command `of` seen outside its session or group.

        Args:
            of: The command (a recorded session leader) it descends from.
            pid: The descendant.
            started: Its start time as `psutil.Process.create_time` gave it.
        """
        entry = {"pid": pid, "started": started, "of": of, **_group_and_session(pid)}
        with self._lock:
            if pid in self._seen or of not in self._entries:
                return
            self._seen[pid] = entry
            self._append({"seen": entry})


def note_escapee(of: int, process: psutil.Process) -> bool:
    """Record `process`, a descendant of command `of`, in the active ledger if it left
    the command's session or group (a sweep reaches the others through the command).

    Returns:
        Whether it is settled: recorded, gone, or no ledger is kept. False while it is
        still in the command's session and group: it may call ``setsid()`` later (a
        fork is seen before its child's first act), so the caller looks again.
    """
    ledger = current_ledger()
    if ledger is None:
        return True
    try:
        if not process.is_running():  # gone, or its pid is another process's now
            return True
        if os.getsid(process.pid) == of and os.getpgid(process.pid) == of:
            return False
        ledger.note_seen(of, process.pid, process.create_time())
    except (OSError, psutil.Error):
        return True
    return True


def note_escapees(of: int, known: set[int]) -> None:
    """Look at command `of`'s descendants now; record each one not in `known` that left
    its session or group (`note_escapee`), and add each one settled to `known` (one
    still in the command's session and group is looked at again next time)."""
    if current_ledger() is None:
        return
    try:
        children = psutil.Process(of).children(recursive=True)
    except psutil.Error:
        return
    for child in children:
        if child.pid not in known and note_escapee(of, child):
            known.add(child.pid)


def _group_and_session(pid: int) -> dict[str, int | None]:
    try:
        return {"pgid": os.getpgid(pid), "sid": os.getsid(pid)}
    except OSError:
        return {"pgid": None, "sid": None}


_COMPACT_AFTER = 4096
"""Lines after which a ledger is rewritten to its live state (one long-lived io)."""


def read_ledger(text: str) -> dict[str, Any] | None:
    """The state a ledger file's lines describe, or None when it has no owner line."""
    data: dict[str, Any] | None = None
    state: dict[str, Any] = {"runs": [], "stores": [], "entries": {}, "placeholders": {},
                             "temporaries": {},
                             "seen": {}}
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
            "seen": [e for e in state["seen"].values() if e.get("of") in state["entries"]],
            "placeholders": list(state["placeholders"].values()),
            "temporaries": list(state["temporaries"].values())}


def _apply(record: dict[str, Any], state: dict[str, Any]) -> None:
    """Fold one line after the owner line into `state`."""
    for key in ("run", "store"):
        value = record.get(key)
        if isinstance(value, str) and value not in state[key + "s"]:
            state[key + "s"].append(value)
    added, placeholder, seen = record.get("add"), record.get("placeholder"), record.get("seen")
    if isinstance(added, dict) and "pid" in added:
        state["entries"][int(added["pid"])] = added
    elif isinstance(seen, dict) and "pid" in seen:
        state["seen"][int(seen["pid"])] = seen
    elif isinstance(record.get("remove"), int):
        state["entries"].pop(record["remove"], None)
    elif isinstance(placeholder, dict) and isinstance(placeholder.get("path"), str):
        state["placeholders"][placeholder["path"]] = placeholder
    elif isinstance(record.get("released"), str):
        state["placeholders"].pop(record["released"], None)
    else:
        _apply_temporary(record, state["temporaries"])


def _apply_temporary(record: dict[str, Any], temporaries: dict[str, dict[str, str]]) -> None:
    """Fold a `temporary` (made) or `renamed` (done with) line into `temporaries`."""
    for key, made in (("temporary", True), ("renamed", False)):
        value = record.get(key)
        if (isinstance(value, dict) and isinstance(value.get("root"), str)
                and isinstance(value.get("path"), str)):
            name = f"{value['root']}\0{value['path']}"
            if made:
                temporaries[name] = {"root": value["root"], "path": value["path"]}
            else:
                temporaries.pop(name, None)


_active: Ledger | None = None
_active_lock = threading.Lock()


def activate_ledger(folder: Path | None = None) -> Ledger:
    """Start (once per process) keeping this process's ledger."""
    global _active
    with _active_lock:
        if _active is None:
            from harness_core.workspace import record_temporaries

            _active = Ledger(folder or ledger_folder())
            atexit.register(_discard, _active)
            record_temporaries((_active.note_temporary, _active.forget_temporary))
        return _active


def _discard(ledger: Ledger) -> None:
    ledger.close_file()
    with contextlib.suppress(OSError):
        ledger.path.unlink()


def current_ledger() -> Ledger | None:
    """The active ledger, or None when this process keeps none (library use)."""
    return _active

"""The sweep: what dead `io` processes left running is ended by the next `io`.

`sweep` (called when an `io` command opens the store, `io resume` included) reads the
ledgers (`_ledger`) of `io` processes that are gone (pid dead, or alive with another
start time) and kills, never touching a reused pid:

- every member of each recorded cgroup (only commands of that run were ever put there),
  then removes the cgroup;
- each recorded command whose start time still matches, and every process of its
  process group and of its session (ids are not reused while they have members), that
  started after the dead `io`;
- each recorded escapee (a descendant seen outside its command's session or group while
  the line ran) whose start time still matches, and its own group and session;
- every process of this user whose environment holds the dead owner's token and that
  started after the owner: a descendant that left the process group (`setsid`), even
  without a cgroup.

Each process signalled is then waited for; one still running after the wait, or that
may not be signalled, is reported as not ended, with why (`Swept.killed`, whose rows
`io trace` shows). It also removes the placeholders the dead `io` left (`_placeholders`).

What survives on a floor without a writable pids cgroup: a descendant that cleared its
environment and left its command's session and group before `io` saw it (born and
orphaned between two samples of its line, or under `exec`, whose tree is not sampled).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_core._record import record
from harness_core.errors import HarnessError
from harness_core.sandbox._ledger import TOKEN_VARIABLE, ledger_folder, read_ledger
from harness_core.sandbox._placeholders import remove_recorded
from harness_core.sandbox._started import process_started

if TYPE_CHECKING:
    import psutil
else:
    from harness_core._lazy import psutil  # imported on its first use

__all__ = ["Swept", "sweep"]

_SLACK = 0.05
"""Seconds two readings of one process's start time may differ by."""
_WAIT_SECONDS = 3.0
"""How long killed processes are given to be gone before one is reported as not ended
(SIGKILL takes effect at once, except for a process in uninterruptible sleep)."""


@record
class Swept:
    """What one sweep did for one dead `io` process.

    Attributes:
        owner_pid: The dead `io`.
        runs: The runs it drove.
        killed: One row per process signalled: pid, name, why it was a leftover, and
            `ended` (False, with `error`, for one that could not be ended).
        removed: Placeholders, and temporary files of writes it was killed in, that it
            left in a workspace and that were removed.
    """

    owner_pid: int
    runs: tuple[str, ...]
    killed: tuple[dict[str, Any], ...]
    removed: tuple[str, ...] = ()

    @property
    def not_ended(self) -> tuple[dict[str, Any], ...]:
        """The processes that could not be ended."""
        return tuple(k for k in self.killed if k.get("ended") is False)


def _same(pid: int, started: float | None) -> psutil.Process | None:
    try:
        process = psutil.Process(pid)
        if started is not None and abs(process.create_time() - started) <= _SLACK:
            return process
    except psutil.Error:
        pass
    return None


class _Kills:
    """The processes one sweep signalled, each once, then waited for."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._signalled: dict[int, psutil.Process] = {}

    def kill(self, process: psutil.Process, why: str) -> None:
        if any(row["pid"] == process.pid for row in self.rows):
            return
        try:
            name = process.name()
        except psutil.Error:
            name = "?"
        row: dict[str, Any] = {"pid": process.pid, "name": name, "why": why}
        try:
            process.kill()
        except psutil.NoSuchProcess:
            return  # gone by itself meanwhile
        except psutil.Error as exc:
            row.update(ended=False, error=f"cannot be signalled: {type(exc).__name__}")
            self.rows.append(row)
            return
        self._signalled[process.pid] = process
        self.rows.append(row)

    def wait(self) -> list[dict[str, Any]]:
        """Wait for what was signalled; mark each row ended or not. A zombie counts as
        ended (its parent, maybe init, reaps it when it will)."""
        deadline = time.monotonic() + _WAIT_SECONDS
        alive = list(self._signalled.values())
        while True:
            alive = [p for p in alive if _running(p)]
            if not alive or time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        still = {p.pid for p in alive}
        for row in self.rows:
            if "ended" not in row:
                row["ended"] = row["pid"] not in still
                if not row["ended"]:
                    row["error"] = f"still running {_WAIT_SECONDS:g} s after SIGKILL"
        return self.rows


def _running(process: psutil.Process) -> bool:
    try:  # is_running compares the start time: a pid reused meanwhile is not this one
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _kill_cgroup(path: Path, kills: _Kills) -> None:
    with contextlib.suppress(OSError):  # a sandbox's cgroup holds its commands' cgroups
        for inner in path.iterdir():
            if inner.is_dir():
                _kill_cgroup(inner, kills)
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
                kills.kill(psutil.Process(pid), f"member of {path.name}")
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        path.rmdir()


def _members(ident: int, since: float) -> Iterator[tuple[psutil.Process, str]]:
    """Processes started at or after `since` whose group or session id is `ident`."""
    for process in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if process.create_time() < since:
                continue
            if os.getpgid(process.pid) == ident:
                yield process, "process group"
            elif os.getsid(process.pid) == ident:
                yield process, "session"


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


def _end_named(entry: dict[str, Any], why: str, since: float, kills: _Kills) -> None:
    """End a recorded process if it is still the one recorded, and the members of the
    group and session it leads (when it is gone, its ids cannot have been reused while
    members keep them)."""
    pid = int(entry["pid"])
    process = _same(pid, entry.get("started"))
    if process is not None:
        kills.kill(process, why)
    elif psutil.pid_exists(pid):
        return  # the pid is another process's now: nothing of ours leads by this id
    for member, kind in _members(pid, since):
        kills.kill(member, kind)


def _sweep_one(data: dict[str, Any]) -> list[dict[str, Any]]:
    owner_started = float(data.get("owner_started") or 0.0)
    kills = _Kills()
    for entry in data.get("entries", []):
        if entry.get("cgroup"):
            _kill_cgroup(Path(entry["cgroup"]), kills)
        _end_named(entry, "command", owner_started, kills)
    for seen in data.get("seen", []):
        _end_named(seen, "left its command's session", owner_started, kills)
    token = data.get("token")
    if isinstance(token, str) and token:
        for process in _tokened(token, owner_started):
            kills.kill(process, f"descendant ({TOKEN_VARIABLE})")
    return kills.wait()


def _owner_gone(data: dict[str, Any]) -> bool:
    pid = int(data.get("owner_pid", 0))
    if pid == os.getpid():
        return False
    # What `_same(pid, started) is None` says, read without psutil: a live owner is the
    # common case at every start, and it needs no process object.
    started, recorded = process_started(pid), data.get("owner_started")
    return started is None or recorded is None or abs(started - recorded) > _SLACK


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
        stores = data.get("stores") or []
        if (store is not None and stores and store not in stores and data.get("entries")
                and not _stores_gone(stores)):
            removed = _remove_leftovers(path, data)
            if removed:  # the commands wait for their store; the placeholders are done
                out.append(Swept(int(data.get("owner_pid", 0)), (), (), removed))
            continue  # commands of another store's runs: that store records their sweep
        killed = _sweep_one(data)
        # After the kill: a surviving sandbox still has its mounts on the placeholders.
        removed = _remove_leftovers(path, data)
        if killed or removed:
            swept = Swept(int(data.get("owner_pid", 0)), tuple(data.get("runs", [])),
                          tuple(killed), removed)
            if record is not None and killed:
                record(swept)
            out.append(swept)
        with contextlib.suppress(OSError):
            path.unlink()
    return out


def _remove_leftovers(path: Path, data: dict[str, Any]) -> tuple[str, ...]:
    """Remove a dead `io`'s placeholders that are untouched and the temporary files of
    the writes it was killed in; note each in its ledger so no later sweep looks at them
    again."""
    records = data.get("placeholders") or []
    temporaries = data.get("temporaries") or []
    if not records and not temporaries:
        return ()
    removed = [*remove_recorded(records), *_remove_temporaries(temporaries)]
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps({"released": str(r.get("path"))}) + "\n"
                             for r in records))
        handle.write("".join(json.dumps({"renamed": t}) + "\n" for t in temporaries))
    return tuple(removed)


def _remove_temporaries(records: list[dict[str, str]]) -> list[str]:
    """Remove what `Workspace.remove_temporary` takes for a write's temporary file."""
    from harness_core.workspace import Workspace

    removed: list[str] = []
    for entry in records:
        with contextlib.suppress(HarnessError, OSError, KeyError, TypeError, ValueError):
            root = Path(entry["root"])
            if root.is_absolute() and Workspace(root).remove_temporary(entry["path"]):
                removed.append(str(root / entry["path"]))
    return removed

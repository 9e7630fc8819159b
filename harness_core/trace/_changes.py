"""The files a run changed, rebuilt from what the store recorded.

The store keeps, per write, the sizes of the change (the `edits` table: lines added and
removed, bytes before and after) and, in the ledger, the arguments of the call that
made it. It keeps no copy of a file. So a diff here is derived, and says how complete
it is:

- `write_file` records the whole new content. The old content is known when the file
  was created by the run (0 bytes before), or when the run wrote or read it whole
  earlier; otherwise the diff shows the new content against an unknown old one.
- `edit_file` records the replaced text and its replacement. With the file's content
  known from earlier in the run, the diff is exact; otherwise it is the replaced hunk
  without the lines around it.
- Files changed by commands (`exec`, `shell`) are not recorded at all.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

from harness_core._record import record
from harness_core.records import Edit
from harness_core.store import EditRecord, LedgerEntry
from harness_core.tool_data import FileRead, FileWritten

__all__ = ["FileChange", "FileEdit", "changes_of"]

_WRITERS = ("write_file", "edit_file")


@record
class FileEdit:
    """One change to one file by one tool call.

    Attributes:
        step: The step of the call.
        call_id: The call.
        tool: ``write_file`` or ``edit_file``.
        lines_added: As the tool measured it (after trimming the common head and tail).
        lines_removed: Likewise.
        bytes_before: The file's size before.
        bytes_after: The file's size after.
        diff: A unified diff of the change (derived: see `complete`).
        complete: True when `diff` covers the whole file; False when the old content was
            not known (a write shows only new lines, an edit only its hunk).
    """

    step: int
    call_id: str
    tool: str
    lines_added: int | None
    lines_removed: int | None
    bytes_before: int | None
    bytes_after: int | None
    diff: str
    complete: bool


@record
class FileChange:
    """Every recorded change to one file, in order.

    Attributes:
        path: Workspace-relative path.
        edits: The changes, oldest first.
        created: The run created the file (it had 0 bytes before the first change).
    """

    path: str
    edits: tuple[FileEdit, ...]
    created: bool

    @property
    def lines_added(self) -> int:
        return sum(e.lines_added or 0 for e in self.edits)

    @property
    def lines_removed(self) -> int:
        return sum(e.lines_removed or 0 for e in self.edits)

    @property
    def complete(self) -> bool:
        """Whether every edit's diff covers the whole file."""
        return all(e.complete for e in self.edits)


def _diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True),
                                 after.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _hunk(path: str, old: str, new: str) -> str:
    """An edit's replacement alone: where in the file it sits was not recorded."""
    body = [f"-{line}\n" for line in old.splitlines()] + [f"+{line}\n" for line in new.splitlines()]
    return f"--- a/{path}\n+++ b/{path}\n@@ position not recorded @@\n" + "".join(body)


def _path_of(entry: LedgerEntry) -> str | None:
    data = entry.data
    if isinstance(data, FileRead | FileWritten):
        return data.path
    path = entry.arguments.get("path")
    return path if isinstance(path, str) else None


def _str(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""


@record
class _NoSize:
    """The sizes of a write the store did not record: each unknown."""

    lines_added: None = None
    lines_removed: None = None
    bytes_before: None = None
    bytes_after: None = None


_UNKNOWN_SIZE = _NoSize()


class _Replay:
    """Walks the ledger, tracking what is known of each file's content."""

    def __init__(self, sizes: Sequence[EditRecord]) -> None:
        self.known: dict[str, str] = {}
        self.sizes = {(s.call_id, s.edit.path): s.edit for s in sizes}
        self.edits: dict[str, list[FileEdit]] = {}
        self.created: dict[str, bool] = {}

    def read(self, entry: LedgerEntry, path: str) -> None:
        cut = entry.data.truncated if isinstance(entry.data, FileRead) else 0
        whole = not entry.arguments.get("offset") and not entry.arguments.get("limit")
        if whole and not cut and entry.observation is not None:
            self.known[path] = entry.observation

    def write(self, entry: LedgerEntry, path: str) -> None:
        size = self.sizes.get((entry.call_id, path))
        if entry.name == "write_file":
            before, after = self._before(path, size), _str(entry.arguments, "content")
            diff = _diff(path, before or "", after)
            complete = before is not None
        else:
            old, new = _str(entry.arguments, "old"), _str(entry.arguments, "new")
            known = self.known.get(path)
            if known is not None and known.count(old) == 1:
                after = known.replace(old, new, 1)
                diff, complete = _diff(path, known, after), True
            else:
                after = None
                diff, complete = _hunk(path, old, new), False
        if after is None:
            self.known.pop(path, None)
        else:
            self.known[path] = after
        self.created.setdefault(path, size is not None and size.bytes_before == 0)
        sized = size or _UNKNOWN_SIZE
        self.edits.setdefault(path, []).append(FileEdit(
            entry.step_index, entry.call_id, entry.name, sized.lines_added,
            sized.lines_removed, sized.bytes_before, sized.bytes_after, diff, complete))

    def _before(self, path: str, size: Edit | None) -> str | None:
        if path in self.known:
            return self.known[path]
        return "" if size is not None and size.bytes_before == 0 else None


def changes_of(ledger: Iterable[LedgerEntry], sizes: Sequence[EditRecord]
               ) -> tuple[FileChange, ...]:
    """The run's file changes, from its ledger and its recorded edit sizes.

    Args:
        ledger: The run's ledger entries, in order.
        sizes: The store's `edits` rows of the run (`Store.edits`).

    Returns:
        One `FileChange` per path, in the order each path was first changed.
    """
    replay = _Replay(sizes)
    for entry in ledger:
        if entry.is_error or entry.observation is None:
            continue
        path = _path_of(entry)
        if path is None:
            continue
        if entry.name == "read_file":
            replay.read(entry, path)
        elif entry.name in _WRITERS:
            replay.write(entry, path)
    return tuple(FileChange(p, tuple(e), replay.created.get(p, False))
                 for p, e in replay.edits.items())

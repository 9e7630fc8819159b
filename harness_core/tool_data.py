"""What a tool call observed, typed: `ToolOutcome.data` and `LedgerEntry.data`.

Each built-in tool returns one kind of record (`ShellData` for `shell`, `FileWritten`
for `write_file` …), a frozen dataclass whose fields are the JSON object's keys in the
order that object has always had: `to_json()` writes exactly the bytes the store, the
events and `io tool --json` wrote when the data was a dict, and `read_tool_data` reads
a recorded object back into the record its tool returns. Payloads that are genuinely
open stay open, and say so: an MCP server's structured result (`McpData.structured`),
a document's extracted content (`DocumentRead.extra`) and a caller's own tool's data
(`OpenData`).

A record's `extra` field, where it has one, is spread into the JSON object at its
place (it holds the keys the record does not name); a field in `_OMIT_NONE` is left out
of the object when it is None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, field, fields
from typing import Any, ClassVar, TypeVar

from harness_core._record import record
from harness_core.records import Edit

__all__ = [
    "AnswerData",
    "ChildRunData",
    "DirListing",
    "DocumentRead",
    "ExecData",
    "FileRead",
    "FileWritten",
    "FindData",
    "GitCommitData",
    "GitDiffData",
    "GitStatusData",
    "GrepData",
    "HandleData",
    "HandleStarted",
    "ImageData",
    "McpData",
    "OpenData",
    "PlanData",
    "Refusal",
    "ShellData",
    "SpawnRefused",
    "TodoItem",
    "ToolData",
    "read_tool_data",
]

_T = TypeVar("_T", bound="ToolData")
_Decoder = Callable[[Any], Any]


def _encode(value: Any) -> Any:
    to_json = getattr(value, "to_json", None)
    if to_json is not None:
        return to_json()
    if isinstance(value, tuple | list):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    return value


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in value) if isinstance(value, list | tuple) else ()


def _edits(value: Any) -> tuple[Edit, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(Edit.from_json(e) for e in value if isinstance(e, Mapping))


def _objects(value: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(dict(v) for v in value if isinstance(v, Mapping))


@record(slots=True)
class Refusal:
    """Why an act or a construct was refused.

    Attributes:
        reason: Why.
        act: The act kind (``read``, ``write``, ``exec``, ``net``), when an act was refused;
            ``tool`` when a hook refused the whole call.
        target: The path, argv or host refused.
        construct: The shell construct refused, when a construct was.
        column: The construct's column.
        rule: The rule pattern that decided, when a rule did.
        layer: The layer of that rule (a scope name, ``tier`` or ``builtin``).
    """

    reason: str
    act: str | None = None
    target: str | None = None
    construct: str | None = None
    column: int | None = None
    rule: str | None = None
    layer: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason}
        for key in ("act", "target", "construct", "column", "rule", "layer"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Refusal:
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)

        column = data.get("column")
        return Refusal(str(data.get("reason", "")), act=text("act"), target=text("target"),
                       construct=text("construct"),
                       column=column if isinstance(column, int) else None,
                       rule=text("rule"), layer=text("layer"))


@record(slots=True)
class ToolData:
    """The base of every tool's data record: generic `to_json` and `from_json`."""

    _OMIT_NONE: ClassVar[frozenset[str]] = frozenset()
    _DECODE: ClassVar[Mapping[str, _Decoder]] = {}

    def to_json(self) -> dict[str, Any]:
        """The JSON object, keys in the record's field order."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "extra":
                out.update(_encode(value))
            elif value is not None or f.name not in self._OMIT_NONE:
                out[f.name] = _encode(value)
        return out

    @classmethod
    def from_json(cls: type[_T], data: Mapping[str, Any]) -> _T:
        """Read a recorded object (keys the record does not name go to `extra`, if it
        has one, else are dropped)."""
        names = {f.name for f in fields(cls)} - {"extra"}
        kwargs: dict[str, Any] = {k: cls._DECODE.get(k, _same)(v) for k, v in data.items()
                                  if k in names}
        if len(names) < len(fields(cls)):
            kwargs["extra"] = {k: v for k, v in data.items() if k not in names}
        return cls(**kwargs)

    @classmethod
    def fits(cls, data: Mapping[str, Any]) -> bool:
        """Whether `data` holds every key this record requires."""
        required = {f.name for f in fields(cls)
                    if f.default is MISSING and f.default_factory is MISSING}
        return required <= data.keys()


def _same(value: Any) -> Any:
    return value


@record(slots=True)
class OpenData(ToolData):
    """Data of a tool `io` does not know (a caller's own): an open JSON object."""

    values: Mapping[str, Any] = field(default_factory=lambda: {})

    def to_json(self) -> dict[str, Any]:
        return dict(self.values)

    @classmethod
    def from_json(cls: type[_T], data: Mapping[str, Any]) -> _T:
        return cls(values=dict(data))  # type: ignore[call-arg]


@record(slots=True)
class ShellData(ToolData):
    """`shell`: a foreground command line that ran (or ran in part, then was refused).

    Attributes:
        sandbox: The backend it ran in (``linux``, ``floor``, ``off`` …).
        exit_status: The line's exit status.
        stdout: Its standard output, bounded (the cut is stated in the text).
        stderr: Its standard error, bounded.
        truncated: Bytes of output cut.
        timed_out: Whether the timeout killed it.
    """

    sandbox: str
    exit_status: int
    stdout: str
    stderr: str
    truncated: int
    timed_out: bool


@record(slots=True)
class ExecData(ToolData):
    """`exec`: one argv that ran.

    Attributes:
        exit_status: Its exit status (None when the timeout killed it).
        stdout: Its standard output, bounded.
        stderr: Its standard error, bounded.
        truncated: Bytes of output cut.
        timed_out: Whether the timeout killed it.
        sandbox: The backend it ran in.
    """

    exit_status: int | None
    stdout: str
    stderr: str
    truncated: int
    timed_out: bool
    sandbox: str | None = None
    _OMIT_NONE = frozenset({"sandbox"})


@record(slots=True)
class HandleStarted(ToolData):
    """`shell_start`: the handle of a started line and its processes."""

    handle: str
    pids: tuple[int, ...] = ()
    _DECODE = {"pids": _ints}


@record(slots=True)
class HandleData(ToolData):
    """`shell_poll` and `shell_kill`: where a handle stands.

    Attributes:
        handle: The handle.
        running: Whether its line still runs.
        exit_status: The line's exit status once it ended.
        end_reason: How it ended (``exited``, ``killed`` …).
        cursor: The output offset read up to.
        pending: Bytes of output not read yet.
        orphaned: Whether an earlier io started it and is gone.
        output: The output read by this call.
    """

    handle: str
    running: bool = False
    exit_status: int | None = None
    end_reason: str | None = None
    cursor: int = 0
    pending: int = 0
    orphaned: bool = False
    output: str = ""


@record(slots=True)
class FileRead(ToolData):
    """`read_file`: the file read and the bytes cut."""

    path: str
    truncated: int = 0


@record(slots=True)
class FileWritten(ToolData):
    """A write: `write_file`, `edit_file` and the document writers.

    Attributes:
        path: The file written.
        edits: The size of each change.
        extra: What a document writer adds (``cells`` of `xlsx_edit`, ``filled`` of
            `pdf_fill_form`).
    """

    path: str
    edits: tuple[Edit, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=lambda: {})
    _DECODE = {"edits": _edits}


@record(slots=True)
class DirListing(ToolData):
    """`list_dir`: the directory and its entries."""

    path: str
    entries: tuple[str, ...] = ()
    truncated: int = 0
    _DECODE = {"entries": _strings}


@record(slots=True)
class FindData(ToolData):
    """`find`: the paths that matched."""

    matches: tuple[str, ...]
    truncated: int = 0
    _DECODE = {"matches": _strings}


@record(slots=True)
class GrepData(ToolData):
    """`grep`: how many lines matched."""

    count: int
    truncated: int = 0


@record(slots=True)
class GitStatusData(ToolData):
    """`git_status`: the branch and each changed path (`StatusEntry.to_json` objects)."""

    branch: str | None
    commit: str | None = None
    upstream: str | None = None
    ahead: int | None = None
    behind: int | None = None
    entries: tuple[Mapping[str, Any], ...] = ()
    truncated: int = 0
    _DECODE = {"entries": _objects}


@record(slots=True)
class GitDiffData(ToolData):
    """`git_diff`: what was compared, the files that differ and those the policy hid."""

    mode: str
    ref: str | None = None
    files: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    total_bytes: int = 0
    truncated: int = 0
    _DECODE = {"files": _strings, "skipped": _strings}


@record(slots=True)
class GitCommitData(ToolData):
    """`git_commit`: the commit, its files, the call's trailer, and whether a resumed
    call found the commit it had made before the crash (``recovered``)."""

    commit: str
    files: tuple[str, ...] | None = None
    call: str | None = None
    recovered: bool | None = None
    _OMIT_NONE = frozenset({"files", "recovered"})
    _DECODE = {"files": _strings}


@record(slots=True)
class TodoItem:
    """One item of the agent's plan.

    Attributes:
        content: What to do.
        status: ``pending``, ``in_progress`` or ``done``.
        revision: The plan's revision the item belongs to, as the store reads it back
            (`Store.todos`); None in a tool's data, which carries it once (`PlanData`).
    """

    content: str
    status: str
    revision: int | None = None

    def to_json(self) -> dict[str, Any]:
        head = {"content": self.content, "status": self.status}
        return head if self.revision is None else {**head, "revision": self.revision}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> TodoItem:
        revision = data.get("revision")
        return TodoItem(str(data.get("content", "")), str(data.get("status", "")),
                        revision if isinstance(revision, int) else None)


def _todos(value: Any) -> tuple[TodoItem, ...]:
    return tuple(TodoItem.from_json(i) for i in _objects(value))


@record(slots=True)
class PlanData(ToolData):
    """`todo_write`: the plan recorded and its revision."""

    todos: tuple[TodoItem, ...]
    revision: int | None = None
    _DECODE = {"todos": _todos}


@record(slots=True)
class AnswerData(ToolData):
    """`ask_question`: the question and who answered it (``person`` or ``responder``)."""

    answer: str
    answered_by: str
    question: str | None = None
    _OMIT_NONE = frozenset({"question"})

    def to_json(self) -> dict[str, Any]:
        head = {} if self.question is None else {"question": self.question}
        return {**head, "answer": self.answer, "answered_by": self.answered_by}


@record(slots=True)
class ChildRunData(ToolData):
    """`spawn_agent`: how the child run ended."""

    child_run_id: str
    agent: str | None = None
    status: str = ""
    steps: int = 0
    verified: bool | None = None
    answer: str = ""


@record(slots=True)
class SpawnRefused(ToolData):
    """`spawn_agent`: why no child was started."""

    spawn_refused: str


@record(slots=True)
class ImageData(ToolData):
    """`view_image`: the image shown (its bytes go to the model, never the store)."""

    path: str
    media_type: str
    width: int
    height: int
    bytes: int
    sha256: str


@record(slots=True)
class DocumentRead(ToolData):
    """A document reader (`xlsx_read`, `docx_read`, `pptx_read`, `pdf_read`,
    `pdf_fill_form` listing its fields, `barcode_decode`).

    Attributes:
        path: The document.
        extra: The content extracted, in the reader's own shape (``sheets`` and ``read``
            of a workbook, ``blocks`` of a document, ``pages``, ``fields``, ``barcodes`` …).
        truncated: Bytes of the text cut (None: the reader does not cut).
    """

    path: str
    extra: Mapping[str, Any] = field(default_factory=lambda: {})
    truncated: int | None = None
    _OMIT_NONE = frozenset({"truncated"})


@record(slots=True)
class McpData(ToolData):
    """A tool of an MCP server.

    Attributes:
        server: The server's name.
        tool: The tool's name on that server.
        structured: The server's structured result, when it sent one that fits (open
            JSON: the server's own shape).
        truncated_bytes: Bytes of the text cut, when any were.
    """

    server: str
    tool: str
    structured: Any = None
    truncated_bytes: int | None = None
    _OMIT_NONE = frozenset({"structured", "truncated_bytes"})


_WRITERS = ("write_file", "edit_file", "xlsx_write", "xlsx_edit", "docx_write", "pdf_write",
            "pdf_watermark")
_READERS = ("xlsx_read", "docx_read", "pptx_read", "pdf_read", "barcode_decode")
_BY_TOOL: dict[str, tuple[type[ToolData], ...]] = {
    "shell": (ShellData,), "exec": (ExecData,), "shell_start": (HandleStarted,),
    "shell_poll": (HandleData,), "shell_kill": (HandleData,), "read_file": (FileRead,),
    **{name: (FileWritten,) for name in _WRITERS}, "list_dir": (DirListing,),
    "find": (FindData,), "grep": (GrepData,), "git_status": (GitStatusData,),
    "git_diff": (GitDiffData,), "git_commit": (GitCommitData,), "todo_write": (PlanData,),
    "ask_question": (AnswerData,), "spawn_agent": (SpawnRefused, ChildRunData),
    **{name: (DocumentRead,) for name in _READERS},
    "pdf_fill_form": (FileWritten, DocumentRead), "view_image": (ImageData,),
}
_MCP_PREFIX = "mcp__"


def read_tool_data(tool: str, data: Mapping[str, Any]) -> ToolData:
    """The record `tool` returns, read from its recorded JSON object.

    An object that does not fit the record of its tool (a caller's own tool, a shape
    from another version) reads back as `OpenData`, unchanged.
    """
    kinds = _BY_TOOL.get(tool) or ((McpData,) if tool.startswith(_MCP_PREFIX) else ())
    for kind in kinds:
        if kind is FileWritten and "edits" not in data:
            continue
        if kind.fits(data):
            return kind.from_json(data)
    return OpenData.from_json(data)

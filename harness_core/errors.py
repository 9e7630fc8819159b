"""The one exception tree of `io`; every error the library raises is a `HarnessError`.

The branches map to outcomes (the CLI turns each into an exit code)::

    HarnessError
    ├── ConfigError            operator mistake in io.toml or a flag          → exit 2
    │   ├── UsageError         a bad argument on the command line             → exit 2
    │   │   ├── WorkspaceChanged   io rewind/undo refused: files changed outside io
    │   │   ├── AmbiguousId    a shortened id that matches more than one run or session
    │   │   └── RunNotInFlight a steer or interrupt for a run nothing drives now
    │   ├── MissingExtra       a document tool or gate whose pip extra is not installed
    │   ├── MissingSecret      a `${env:}`/`${file:}` value or provider key that is not set
    │   ├── RequirementError   a value that would loosen the system scope's [requirements]
    │   └── HostBoundaryError  a hook, MCP server or file io writes for the operator would
    │                          cross the host boundary (a program or path the agent can
    │                          write, or could have planted)
    ├── WorkspaceError         a path the workspace cannot serve
    │   └── PathEscape         a path that would leave the workspace root
    ├── PolicyError            a malformed rule or policy (not a refusal: refusals are data)
    ├── StateError             the store failed; wraps sqlite3.Error, never exposes it
    │   ├── CheckpointFormatError  a store written with another CHECKPOINT_FORMAT
    │   ├── StoreDamaged       the store file fails its self-check; io will not write it
    │   ├── StoreUnavailable   the store cannot be used as it is: not a regular file,
    │   │                      read-only, disk full, locked by another process
    │   ├── RunNotFound        an unknown run id                              → exit 2
    │   ├── RunInUse           another live process drives this run           → exit 5
    │   └── SessionInUse       another live process takes a turn on this session → exit 5
    ├── ProviderError          a model provider failed (.retryable, .status)
    │   └── ScriptExhausted    the scripted replay has no line for this step
    ├── SandboxUnavailable     the sandbox could not start (not the command's own failure)
    ├── McpUnavailable         a configured MCP server (not `optional`) could not start,
    │                          connect or authorize, or the policy refused it   → exit 1
    ├── ToolError              a tool could not run (bad arguments, unknown tool)
    │   ├── InvalidToolArguments   arguments that are not the JSON object the tool expects
    │   ├── DocumentTooLarge   a document would unpack past a [documents] limit
    │   ├── DocumentEncrypted  a document is password-protected
    │   ├── ShellRefused       a shell line construct refused by name (.construct, .column)
    │   └── GitRefused         a repository whose files could make io's git run a program
    └── BudgetExceeded         a step, token, cost or wall-clock ceiling was reached

Refusals and failing checks sent back to the model are not exceptions: they are
observations recorded in the ledger. This module imports nothing from `harness_core`.
"""

from __future__ import annotations

__all__ = [
    "AmbiguousId",
    "BudgetExceeded",
    "CheckpointFormatError",
    "ConfigError",
    "DocumentEncrypted",
    "DocumentTooLarge",
    "GitRefused",
    "HarnessError",
    "HostBoundaryError",
    "InvalidToolArguments",
    "McpUnavailable",
    "MissingExtra",
    "MissingSecret",
    "PathEscape",
    "PolicyError",
    "ProviderError",
    "RequirementError",
    "RunInUse",
    "RunNotFound",
    "RunNotInFlight",
    "SandboxUnavailable",
    "ScriptExhausted",
    "SessionInUse",
    "StoreDamaged",
    "StoreUnavailable",
    "ShellRefused",
    "StateError",
    "ToolError",
    "UsageError",
    "WorkspaceChanged",
    "WorkspaceError",
]


class HarnessError(Exception):
    """Root of every error `io` raises.

    Attributes:
        message: One line saying what went wrong.
        hint: Optional line saying what to do about it.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class ConfigError(HarnessError):
    """The configuration (io.toml, a flag, an environment substitution) is wrong."""


class UsageError(ConfigError):
    """A command-line argument is wrong (missing workspace, malformed JSON, …)."""


class WorkspaceChanged(UsageError):
    """`io rewind` / `io undo` refused: files changed outside io since the last state io
    recorded for the run, and restoring would throw that work away.

    When the run was rewound, its newest branch (a run of its own) may be what changed
    the files: the message names it instead of blaming a change outside io. When the
    run's process died inside a step (`kill -9`, a crash), that step's own changes were
    never recorded: the message names the step and says to resume the run first.

    Attributes:
        paths: The workspace paths that changed, sorted.
        branch: The id of the run's newest rewound branch, or None.
        stopped_in: The step the run's process died in, or None.
    """

    def __init__(self, paths: list[str], branch: str | None = None, *,
                 run_id: str | None = None, stopped_in: int | None = None) -> None:
        shown = ", ".join(paths[:20]) + (f" (and {len(paths) - 20} more)" if len(paths) > 20
                                         else "")
        if branch is None and stopped_in is not None:
            super().__init__(
                f"files changed since the run's last recorded state: {shown}; the run's"
                f" process died inside step {stopped_in}, whose changes io never recorded"
                " (or a change outside io made them)",
                hint=f"resume the run first (io resume {run_id}), which records that step,"
                     " then undo or rewind; or commit, move or revert those changes")
        elif branch is None:
            super().__init__(
                f"files changed outside io since the run's last recorded state: {shown}",
                hint="commit, move or revert those changes, then run the command again")
        else:
            super().__init__(
                f"files changed since the run's last recorded state: {shown}; the run was "
                f"rewound, and its branch {branch} (or a change outside io) changed them",
                hint=f"undo or rewind the branch instead: io undo {branch}, "
                     f"io rewind {branch} --to STEP")
        self.paths = tuple(paths)
        self.branch = branch
        self.stopped_in = stopped_in
class AmbiguousId(UsageError):
    """A shortened id that starts more than one run's (or session's) id.

    Attributes:
        kind: ``run`` or ``session``.
        prefix: What was given.
        matches: The ids it starts, newest first (at most ten).
    """

    def __init__(self, kind: str, prefix: str, matches: list[str]) -> None:
        shown = ", ".join(matches[:10]) + (", …" if len(matches) > 10 else "")
        super().__init__(f"{prefix!r} matches more than one {kind}: {shown}",
                         hint=f"give more of the {kind} id")
        self.kind = kind
        self.prefix = prefix
        self.matches = matches[:10]


class RunNotInFlight(UsageError):
    """`io interrupt` (or `io steer`) named a run that cannot take it: a paused, ended
    or stopped run has no next step boundary for it to land at.

    Attributes:
        run_id: The run.
        status: Its status (a `RunStatus` value).
    """

    def __init__(self, run_id: str, status: str, message: str, *, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.run_id = run_id
        self.status = status


class MissingExtra(ConfigError):
    """A tool or gate needs an optional dependency (a pip extra) that is not installed.

    Attributes:
        extra: The extra's name, e.g. ``pdf``.
        install: The exact command that installs it, e.g. ``pip install 'io-harness[pdf]'``.
    """

    def __init__(self, what: str, extra: str) -> None:
        self.extra = extra
        self.install = f"pip install 'io-harness[{extra}]'"
        super().__init__(f"{what} needs the {extra!r} extra, which is not installed:"
                         f" {self.install}", hint=self.install)


class MissingSecret(ConfigError):
    """A secret the configuration names is not there: an unset or empty environment
    variable, an unreadable or empty file, or no key for a provider. `io config check`
    reports one as a warning (the run will need it); `io run` stops on it.

    Attributes:
        name: The variable or file named (never its value).
    """

    def __init__(self, message: str, *, name: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.name = name


class RequirementError(ConfigError):
    """A value would loosen what the system scope's `[requirements]` table holds.

    Raised when the configuration is loaded (or a flag applied), never clamped in
    silence: a lower scope, a `-c` file, an agent definition, a command-line flag or the
    environment that asks for more than the floor allows stops the command (exit 2).

    Attributes:
        requirement: The requirement's key, e.g. ``requirements.max_steps``.
        source: The system scope file that sets it.
        tried_by: What asked for more: ``project scope (/w/io.toml)``, ``the --model
            flag``, ``agent definition 'reviewer' in …``.
    """

    def __init__(self, message: str, *, requirement: str, source: str, tried_by: str,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.requirement = requirement
        self.source = source
        self.tried_by = tried_by


class WorkspaceError(HarnessError):
    """A path inside the workspace cannot be read or written as asked."""


class PathEscape(WorkspaceError):
    """A path resolves outside the workspace root; no rule can allow it.

    Attributes:
        path: The path as it was given.
    """

    def __init__(self, path: str, reason: str = "resolves outside the workspace root") -> None:
        super().__init__(f"path {path!r} {reason}")
        self.path = path
        self.reason = reason


class HostBoundaryError(ConfigError):
    """io refused to start a program or write a file on the host because the agent can
    write what it names: a hook's or MCP server's program or script inside the workspace
    (or missing, so the agent could create it), or a file io writes for the operator
    where the agent could have planted a link (docs/ARCHITECTURE.md, "The host boundary").

    Attributes:
        exists: The refusal is only that something already stands at the path (an
            exclusive write), not a crossing of the boundary.
    """

    def __init__(self, message: str, *, hint: str | None = None, exists: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.exists = exists


class PolicyError(HarnessError):
    """A policy or a rule is malformed (an empty pattern, an unknown tier)."""


class StateError(HarnessError):
    """The store failed.

    The underlying `sqlite3.Error` is chained as `__cause__` for debugging but is not
    part of the public interface: match on `StateError`, never on its cause.
    """


class CheckpointFormatError(StateError):
    """The store was written with a checkpoint format this version does not read.

    Attributes:
        found: The format recorded in the store.
        expected: The format this version writes.
    """

    def __init__(self, found: int, expected: int) -> None:
        super().__init__(
            f"store checkpoint format is {found}, this version reads only {expected}",
            hint="use the io version that wrote this store, or point --store elsewhere",
        )
        self.found = found
        self.expected = expected


class StoreDamaged(StateError):
    """The store file fails its self-check (not SQLite, truncated, a damaged page, a
    write-ahead log of another database, a missing or garbled format row). Nothing is
    written to it.

    Attributes:
        path: The store file.
        detail: What the check found.
    """

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(
            f"store {path} is damaged: {detail}; io will not write to it",
            hint=f"run `io store check` for a full report; move {path} aside (keep it for"
                 " recovery) or restore a backup, and io starts a new store there",
        )
        self.path = path
        self.detail = detail


class StoreUnavailable(StateError):
    """The store cannot be used as it stands: the path is not a regular file (a FIFO, a
    directory, a device), or the file is read-only, its disk is full, or another
    process holds its lock. The file itself is not damaged and is left as it is.

    Attributes:
        path: The store file.
        reason: Why it cannot be used.
    """

    def __init__(self, path: str, reason: str, *, hint: str | None = None) -> None:
        super().__init__(f"store {path} cannot be used: {reason}", hint=hint)
        self.path = path
        self.reason = reason


class RunNotFound(StateError):
    """No run with the given id is in the store."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"no run {run_id!r} in the store", hint="`io runs` lists recorded runs")
        self.run_id = run_id


class RunInUse(StateError):
    """Another live process is driving this run."""

    def __init__(self, run_id: str, owner_pid: int) -> None:
        super().__init__(
            f"run {run_id} is in use by process {owner_pid}",
            hint="wait for it to finish, or stop that process first",
        )
        self.run_id = run_id
        self.owner_pid = owner_pid


class SessionInUse(StateError):
    """Another live process is taking a turn on this session."""

    def __init__(self, session_id: str, run_id: str) -> None:
        super().__init__(
            f"session {session_id} has a turn in flight (run {run_id})",
            hint="wait for that turn to finish, or `io interrupt` it",
        )
        self.session_id = session_id
        self.run_id = run_id


class ProviderError(HarnessError):
    """A model provider failed.

    Attributes:
        retryable: Whether trying again may succeed (429, 5xx, overload, timeouts).
        status: The HTTP status, when there was one.
        retry_after: Seconds the vendor asked us to wait, when it said.
        attempts: Every failed attempt made before giving up (redacted records).
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
        hint: str | None = None,
        attempts: tuple[object, ...] = (),
    ) -> None:
        super().__init__(message, hint=hint)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.attempts = attempts


class ScriptExhausted(ProviderError):
    """The scripted provider was asked for a completion past its last line."""


class SandboxUnavailable(HarnessError):
    """The sandbox backend could not be started; the command never ran."""


class McpUnavailable(HarnessError):
    """A configured MCP server that is not `optional` could not start, connect or
    authorize, or the policy refused its start or its host: the run does not start."""


class ToolError(HarnessError):
    """A tool could not run as called (unknown tool, bad arguments)."""


class InvalidToolArguments(ToolError):
    """A tool's arguments are not the JSON object it expects."""


class DocumentTooLarge(ToolError):
    """A document would unpack past a `[documents]` limit (a zip bomb, or just too big);
    it was refused before any library parsed it."""


class DocumentEncrypted(ToolError):
    """A document is password-protected and no (right) `password` was given."""


class ShellRefused(ToolError):
    """A shell line uses a construct the lexer refuses.

    Attributes:
        construct: The construct's name, e.g. ``command substitution``.
        column: 1-based column where it starts.
        reason: Why it is refused.
    """

    def __init__(self, construct: str, column: int, reason: str) -> None:
        super().__init__(f"refused {construct} at column {column}: {reason}")
        self.construct = construct
        self.column = column
        self.reason = reason


class GitRefused(ToolError):
    """The git built-ins will not run git in this repository: a file git would read
    names a program (a filter, a textconv, a pager, a signing program...), or git would
    read configuration from a file the agent can write.

    Attributes:
        key: The configuration key or the attribute that names the program, or the
            control file that redirects git (``.git/commondir``, ``gitdir``).
        file: The file that says it (absolute).
        reason: Why io refuses, in one sentence.
    """

    def __init__(self, key: str, file: str, reason: str) -> None:
        super().__init__(reason)
        self.key = key
        self.file = file
        self.reason = reason


class BudgetExceeded(HarnessError):
    """A budget ceiling was reached.

    Attributes:
        budget: Which ceiling: ``steps``, ``tokens``, ``cost`` or ``wall``.
    """

    def __init__(self, budget: str, message: str) -> None:
        super().__init__(message)
        self.budget = budget

"""The shapes a command line takes on its way to running: tokens, `Plan`, `RunPlan`.

A `Plan` is what the parser makes of a line: pure data, built without touching the
filesystem. A `RunPlan` is a plan the checker has passed: every path resolved through
the workspace and every act allowed by the gate. The runner only ever receives a
`RunPlan`. Nothing here does I/O or decides anything.
"""

from __future__ import annotations

from enum import Enum

from harness_core._record import record
from harness_core.policy import Act

__all__ = [
    "Blocked",
    "Chain",
    "CheckedChain",
    "CheckedPipeline",
    "CheckedRedirect",
    "CheckedStage",
    "Connector",
    "Pipeline",
    "Plan",
    "Redirect",
    "RedirectKind",
    "RunPlan",
    "Stage",
]


class RedirectKind(Enum):
    """The redirects a line may use. Closed set (the lexer refuses every other)."""

    STDOUT = ">"
    """Standard output to a file, truncating it."""
    APPEND = ">>"
    """Standard output appended to a file."""
    STDIN = "<"
    """Standard input from a file."""
    STDERR = "2>"
    """Standard error to a file, truncating it."""
    STDERR_APPEND = "2>>"
    """Standard error appended to a file."""
    STDERR_TO_STDOUT = "2>&1"
    """Standard error to wherever standard output goes at that point."""

    @property
    def is_write(self) -> bool:
        """Whether the target file is written (every kind but `STDIN`)."""
        return self is not RedirectKind.STDIN


class Connector(Enum):
    """How a pipeline joins the one before it, with bash's meaning."""

    THEN = ";"
    """Always run."""
    AND = "&&"
    """Run when the previous status is 0."""
    OR = "||"
    """Run when the previous status is not 0."""


@record(slots=True)
class Redirect:
    """One redirect as written.

    Attributes:
        kind: Which redirect.
        target: The target word after quote removal ("" for ``2>&1``).
        column: 1-based column of the operator.
    """

    kind: RedirectKind
    target: str
    column: int


@record(slots=True)
class Stage:
    """One simple command of a pipeline.

    Attributes:
        argv: Program and arguments after quote removal (empty for a stage made only
            of redirects).
        redirects: In the order written; bash applies them left to right.
        cwd: The directory the stage runs in, relative to the line's starting
            directory, normalised lexically as bash's ``cd`` does ("" for the start;
            absolute when a ``cd`` named an absolute path).
        column: 1-based column where the stage starts.
        cd: For a ``cd`` stage, the directory it changes to (lexical, like `cwd`);
            None for every other stage.
    """

    argv: tuple[str, ...]
    redirects: tuple[Redirect, ...]
    cwd: str
    column: int
    cd: str | None = None


@record(slots=True)
class Pipeline:
    """Stages joined by ``|``; its status is the last stage's."""

    stages: tuple[Stage, ...]


@record(slots=True)
class Chain:
    """Pipelines joined by ``&&`` and ``||``; chains are joined by ``;``.

    Attributes:
        pipelines: At least one.
        connectors: ``connectors[i]`` joins ``pipelines[i]`` to ``pipelines[i + 1]``.
    """

    pipelines: tuple[Pipeline, ...]
    connectors: tuple[Connector, ...]


@record(slots=True)
class Plan:
    """A parsed line: chains run one after another, whatever their status.

    Attributes:
        line: The line as given.
        chains: In order; empty for a blank line.
    """

    line: str
    chains: tuple[Chain, ...]

    def stages(self) -> tuple[Stage, ...]:
        """Every stage, in the order written."""
        return tuple(s for c in self.chains for p in c.pipelines for s in p.stages)


@record(slots=True)
class Blocked:
    """Why a line may not run (or may not go on running): data for the model.

    Attributes:
        reason: Why.
        act: The act kind refused (``read``, ``write``, ``exec``), when an act was.
        target: What was refused (the act described, or the path as written).
        construct: The construct refused, when the line's shape was refused.
        column: The construct's or stage's column.
        rule: The rule that decided, when one did.
        layer: That rule's layer (``builtin``, ``tier``, a scope …).
    """

    reason: str
    act: str | None = None
    target: str | None = None
    construct: str | None = None
    column: int | None = None
    rule: str | None = None
    layer: str | None = None


@record(slots=True)
class CheckedRedirect:
    """A redirect whose target the workspace resolved and the gate allowed.

    Attributes:
        kind: Which redirect.
        word: The target as written.
        path: The target relative to the root ("" for ``2>&1``).
    """

    kind: RedirectKind
    word: str
    path: str


@record(slots=True)
class CheckedStage:
    """A stage ready to run.

    Attributes:
        stage: The stage as parsed.
        cwd: Its working directory, resolved (relative to the root).
        redirects: Its redirects, resolved.
        cd: For a ``cd`` stage, the resolved directory; else None.
        acts: Every act the checker allowed for this stage (exec, redirect targets,
            file operands of programs such as ``mv``); a re-check at spawn time asks the
            gate only about acts not in this set.
    """

    stage: Stage
    cwd: str
    redirects: tuple[CheckedRedirect, ...]
    cd: str | None
    acts: frozenset[Act]

    @property
    def argv(self) -> tuple[str, ...]:
        return self.stage.argv


@record(slots=True)
class CheckedPipeline:
    """A pipeline of checked stages."""

    stages: tuple[CheckedStage, ...]


@record(slots=True)
class CheckedChain:
    """A chain of checked pipelines (see `Chain`)."""

    pipelines: tuple[CheckedPipeline, ...]
    connectors: tuple[Connector, ...]


@record(slots=True)
class RunPlan:
    """A plan every act of which was allowed before any process started.

    Attributes:
        line: The line as given.
        chains: As in the `Plan`, with resolved paths.
        base_cwd: The directory the line started in, relative to the root.
    """

    line: str
    chains: tuple[CheckedChain, ...]
    base_cwd: str = ""

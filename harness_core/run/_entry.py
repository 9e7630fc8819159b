"""The tree entry points: one per verb, `run_tree` to start a tree of runs and
`resume_tree` to resume one through its root, each with its options as keywords.

A tree is what `Runner` drives whenever a run calls `spawn_agent`; these functions are
the names the contract gives that path. Every run of a tree shares the store, the
provider, the approver and the responder given here (`TreeOptions`).
`resume_tree_from_stored_policy` and `resume_tree_with_answer` are deprecated
spellings of `resume_tree` with one option set, kept so callers keep working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict, Unpack

from harness_core.clock import Clock
from harness_core.events import EventSink
from harness_core.policy import Approver
from harness_core.providers import Provider
from harness_core.run._loop import Runner
from harness_core.run._spec import RunOutcome, RunSpec
from harness_core.store import Store
from harness_core.tools import Toolbox
from harness_core.tools._plan_tools import Responder

__all__ = [
    "TreeOptions",
    "resume_tree",
    "resume_tree_from_stored_policy",
    "resume_tree_with_answer",
    "run_tree",
]


class TreeOptions(TypedDict, total=False):
    """What every run of a tree shares besides the store and the provider (each optional,
    each `Runner`'s keyword of the same name)."""

    clock: Clock | None
    """Time for budgets, retries and the stall detector (default: the system's)."""
    on_event: EventSink | None
    """Receives every event of every run of the tree."""
    approver: Approver | None
    """Decides an `ask`; None pauses the tree instead."""
    responder: Responder | None
    """Answers the agent's questions; None pauses the tree instead."""
    toolbox: Toolbox | None
    """The tools offered (default: the built-ins)."""
    new_id: Callable[[], str] | None
    """Makes run ids (for stable snapshots)."""


def run_tree(store: Store, provider: Provider, spec: RunSpec,
             **options: Unpack[TreeOptions]) -> RunOutcome:
    """Start a root run of `spec`; each `spawn_agent` call becomes a child run.

    Args:
        store: Where every run of the tree is recorded.
        provider: The model every run of the tree talks to.
        spec: The root's run.
        **options: `TreeOptions`, by keyword.

    Returns:
        The root's outcome; a child's question or approval pauses the root (`PAUSED`,
        with `pause["waiting_run_id"]` naming the run that waits).
    """
    return Runner(store, provider, **options).start(spec)


def resume_tree(
    store: Store,
    provider: Provider,
    root_run_id: str,
    spec: RunSpec,
    *,
    approve: bool | None = None,
    answer: str | None = None,
    stored_policy: bool = False,
    **options: Unpack[TreeOptions],
) -> RunOutcome:
    """Resume the tree of `root_run_id`; every unfinished run continues from its own
    checkpoint, and a child that started is never started again.

    Args:
        store: Where the tree is recorded.
        provider: The model every run of the tree talks to.
        root_run_id: The root's id (the answer or approval reaches the run that waits,
            the root or any child).
        spec: What the tree runs under now; its policy bounds every child.
        approve: The operator's decision on the approval the tree waits for.
        answer: The operator's answer to the question the tree waits for.
        stored_policy: Run every run under the policy it recorded (what ran is what
            the store says ran); `spec`'s own policy is ignored. By default the
            recorded policy of each run is replaced by the one it runs under now.
        **options: `TreeOptions`, by keyword.

    Raises:
        RunNotFound: No such run.
        UsageError: `root_run_id` is a child (resume its root), or the answer or
            approval given does not fit what the tree waits for.
    """
    return Runner(store, provider, **options).resume(
        root_run_id, spec, approve=approve, answer=answer, stored_policy=stored_policy)


class ResumeOptions(TreeOptions, total=False):
    """`TreeOptions` and the operator's decision (the deprecated spellings' keywords)."""

    approve: bool | None
    answer: str | None


def resume_tree_from_stored_policy(store: Store, provider: Provider, root_run_id: str,
                                   spec: RunSpec, **options: Unpack[ResumeOptions]) -> RunOutcome:
    """Deprecated: `resume_tree(..., stored_policy=True)`, which this calls."""
    return resume_tree(store, provider, root_run_id, spec, stored_policy=True, **options)


def resume_tree_with_answer(store: Store, provider: Provider, root_run_id: str,
                            spec: RunSpec, answer: str,
                            **options: Unpack[TreeOptions]) -> RunOutcome:
    """Deprecated: `resume_tree(..., answer=answer)`, which this calls."""
    return resume_tree(store, provider, root_run_id, spec, answer=answer, **options)

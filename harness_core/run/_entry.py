"""The tree entry points: start a tree of runs, resume one through its root.

A tree is what `Runner` drives whenever a run calls `spawn_agent`; these functions are
the names the contract gives that path. Every run of a tree shares the store, the
provider, the approver and the responder given here.
"""

from __future__ import annotations

from collections.abc import Callable

from harness_core.clock import Clock
from harness_core.events import EventSink
from harness_core.policy import Approver
from harness_core.providers import Provider
from harness_core.run._loop import Runner
from harness_core.run._spec import RunOutcome, RunSpec
from harness_core.store import Store
from harness_core.tools import Toolbox
from harness_core.tools._plan_tools import Responder

__all__ = ["resume_tree", "resume_tree_from_stored_policy", "resume_tree_with_answer", "run_tree"]


def _runner(
    store: Store, provider: Provider, clock: Clock | None, on_event: EventSink | None,
    approver: Approver | None, responder: Responder | None, toolbox: Toolbox | None,
    new_id: Callable[[], str] | None,
) -> Runner:
    return Runner(store, provider, clock=clock, on_event=on_event, approver=approver,
                  responder=responder, toolbox=toolbox, new_id=new_id)


def run_tree(
    store: Store,
    provider: Provider,
    spec: RunSpec,
    *,
    clock: Clock | None = None,
    on_event: EventSink | None = None,
    approver: Approver | None = None,
    responder: Responder | None = None,
    toolbox: Toolbox | None = None,
    new_id: Callable[[], str] | None = None,
) -> RunOutcome:
    """Start a root run of `spec`; each `spawn_agent` call becomes a child run.

    Returns:
        The root's outcome; a child's question or approval pauses the root (`PAUSED`,
        with `pause["waiting_run_id"]` naming the run that waits).
    """
    return _runner(store, provider, clock, on_event, approver, responder, toolbox,
                   new_id).start(spec)


def resume_tree(
    store: Store,
    provider: Provider,
    root_run_id: str,
    spec: RunSpec,
    *,
    approve: bool | None = None,
    answer: str | None = None,
    clock: Clock | None = None,
    on_event: EventSink | None = None,
    approver: Approver | None = None,
    responder: Responder | None = None,
    toolbox: Toolbox | None = None,
    new_id: Callable[[], str] | None = None,
) -> RunOutcome:
    """Resume the tree of `root_run_id` under `spec`'s policy (children contained in it).

    Every unfinished child continues from its own checkpoint; a child that started is
    never started again. The recorded policy of each run is replaced by the one it runs
    under now (see `resume_tree_from_stored_policy` to keep what was recorded).

    Raises:
        RunNotFound: No such run.
        UsageError: `root_run_id` is a child (resume its root), or the answer or
            approval given does not fit what the tree waits for.
    """
    return _runner(store, provider, clock, on_event, approver, responder, toolbox,
                   new_id).resume(root_run_id, spec, approve=approve, answer=answer)


def resume_tree_from_stored_policy(
    store: Store,
    provider: Provider,
    root_run_id: str,
    spec: RunSpec,
    *,
    approve: bool | None = None,
    answer: str | None = None,
    clock: Clock | None = None,
    on_event: EventSink | None = None,
    approver: Approver | None = None,
    responder: Responder | None = None,
    toolbox: Toolbox | None = None,
    new_id: Callable[[], str] | None = None,
) -> RunOutcome:
    """Resume the tree with every run under the policy it recorded (what ran is what the
    store says ran). `spec`'s own policy is ignored.

    Raises:
        RunNotFound: No such run.
        UsageError: As `resume_tree`.
    """
    runner = _runner(store, provider, clock, on_event, approver, responder, toolbox, new_id)
    return runner.resume(root_run_id, spec, approve=approve, answer=answer, stored_policy=True)


def resume_tree_with_answer(
    store: Store,
    provider: Provider,
    root_run_id: str,
    spec: RunSpec,
    answer: str,
    *,
    clock: Clock | None = None,
    on_event: EventSink | None = None,
    approver: Approver | None = None,
    responder: Responder | None = None,
    toolbox: Toolbox | None = None,
    new_id: Callable[[], str] | None = None,
) -> RunOutcome:
    """Answer the question the tree waits on (asked by the root or any child) and resume.

    Takes the root's id; the answer reaches the run that asked.

    Raises:
        UsageError: The tree is not waiting for an answer, or `root_run_id` is a child.
    """
    return resume_tree(store, provider, root_run_id, spec, answer=answer, clock=clock,
                       on_event=on_event, approver=approver, responder=responder,
                       toolbox=toolbox, new_id=new_id)

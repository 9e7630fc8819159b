"""What every part of the run loop shares: the runner's store, provider, clock, approver,
responder and toolbox, its event sink with the secrets guard, and, for a run in a tree,
the tree it belongs to. `Runner` makes one `RunParts` and hands it to each phase
(`Asker`, `Actor`, `Verifier`, `Ender`), which reach nothing else of the runner."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import field, replace

from harness_core._record import record
from harness_core.clock import Clock
from harness_core.events import Event, EventSink
from harness_core.policy import Approver
from harness_core.providers import Provider
from harness_core.redaction import RedactingSink, SecretRedactor
from harness_core.run._spec import RunSpec
from harness_core.run._tree import TreeContext
from harness_core.store import Store
from harness_core.tools import Toolbox, ToolContext
from harness_core.tools._plan_tools import Responder

__all__ = ["Extras", "RunParts"]

Extras = Callable[[str, ToolContext], dict[str, object]]
"""Makes the named services a caller's own tools need, per run (`Runner(extras=...)`)."""


@record(frozen=False)
class RunParts:
    """The runner's parts, shared by its phases (one per `Runner`; a child has its own)."""

    store: Store
    provider: Provider
    clock: Clock
    toolbox: Toolbox
    new_id: Callable[[], str]
    approver: Approver | None = None
    responder: Responder | None = None
    extras: Extras | None = None
    sink: EventSink | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    tree: TreeContext | None = None
    """The tree a child runs in (None: a root, whose tree starts with its drive)."""
    redact: SecretRedactor | None = None
    stored_policy: bool = False
    """Every run of the tree runs under the policy it recorded (`resume_tree`)."""

    def emit(self, event: Event) -> None:
        """Send `event` to the sink; a child's events carry the root's id, one at a time."""
        if self.sink is None:
            return
        tree = self.tree
        if tree is None:
            self.sink(event)
            return
        with tree.lock:  # children in parallel: one event at a time, tagged with the root
            self.sink(replace(event, root_run_id=tree.root_run_id))

    def keep_secrets(self, spec: RunSpec) -> None:
        """Keep the spec's secrets out of every record: the store's writes, the events,
        and the tool output the model (and so the record) sees (#22)."""
        redact = SecretRedactor((*spec.secrets, *spec.provider_keys))
        if not redact:
            return
        self.redact = redact
        self.store.redact_with(redact)
        if self.sink is not None and not isinstance(self.sink, RedactingSink):
            self.sink = RedactingSink(self.sink, redact)

"""What every phase of the run loop shares: the runner's parts (store, provider, clock,
approver, toolbox), its event sink with the secrets guard, and the hooks one phase calls
in another (declared here so the phases import downwards only; `Runner` composes them)."""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from harness_core.clock import Clock, SystemClock
from harness_core.events import Event, EventSink
from harness_core.messages import ToolCall
from harness_core.policy import Approver
from harness_core.providers import Provider
from harness_core.redaction import RedactingSink, SecretRedactor
from harness_core.run._drive_state import _Drive
from harness_core.run._launchers import Launchers
from harness_core.run._spec import RunOutcome, RunSpec
from harness_core.run._tree import TreeContext
from harness_core.store import Pause, Store
from harness_core.store._tree import TreePlace
from harness_core.tools import Toolbox, ToolContext, ToolOutcome, default_toolbox
from harness_core.tools._plan_tools import Responder

__all__ = ["_RunnerBase"]


class _RunnerBase(ABC):
    """The runner's state and event sink; the phases' mixins build on it."""

    def __init__(
        self,
        store: Store,
        provider: Provider,
        *,
        clock: Clock | None = None,
        on_event: EventSink | None = None,
        approver: Approver | None = None,
        toolbox: Toolbox | None = None,
        new_id: Callable[[], str] | None = None,
        extras: Callable[[str, ToolContext], dict[str, Any]] | None = None,
        responder: Responder | None = None,
    ) -> None:
        self.store = store
        self.provider = provider
        self.clock = clock or SystemClock()
        self._emit_fn = on_event
        self.approver = approver
        self.toolbox = toolbox or default_toolbox()
        self._new_id = new_id or (lambda: uuid.uuid4().hex[:12])
        self._extras = extras
        self.responder = responder
        self._cancel = threading.Event()
        self._tree: TreeContext | None = None
        self._stored_policy = False
        self._redact: SecretRedactor | None = None

    def cancel(self) -> None:
        """Ask the run to stop at the next step boundary (thread-safe)."""
        self._cancel.set()

    def _keep_secrets(self, spec: RunSpec) -> None:
        """Keep the spec's secrets out of every record: the store's writes, the events,
        and the tool output the model (and so the record) sees (#22)."""
        redact = SecretRedactor((*spec.secrets, *spec.provider_keys))
        if not redact:
            return
        self._redact = redact
        self.store.redact_with(redact)
        if self._emit_fn is not None and not isinstance(self._emit_fn, RedactingSink):
            self._emit_fn = RedactingSink(self._emit_fn, redact)

    def _emit(self, event: Event) -> None:
        if self._emit_fn is None:
            return
        tree = self._tree
        if tree is None:
            self._emit_fn(event)
            return
        with tree.lock:  # children in parallel: one event at a time, tagged with the root
            self._emit_fn(replace(event, root_run_id=tree.root_run_id))

    # ---- provided by the phases (see `Runner`) ----------------------------------------

    @abstractmethod
    def _observe(
        self, drive: _Drive, step: int, index: int, call: ToolCall, outcome: ToolOutcome,
        *, progress: str | None = None,
    ) -> None:
        ...

    @abstractmethod
    def _create(
        self,
        spec: RunSpec,
        launchers: Launchers,
        *,
        place: TreePlace | None = None,
        parent_run_id: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> str:
        ...

    @abstractmethod
    def _drive(
        self,
        run_id: str,
        spec: RunSpec,
        launchers: Launchers,
        *,
        resumed: bool,
        approve: bool | None,
        answer: str | None,
        pause: Pause | None = None,
        wall_before: float = 0.0,
        tokens_before: int = 0,
        own_launchers: bool = True,
    ) -> RunOutcome:
        ...

    @abstractmethod
    def resume(
        self,
        run_id: str,
        spec: RunSpec,
        *,
        approve: bool | None = None,
        answer: str | None = None,
        stored_policy: bool = False,
    ) -> RunOutcome:
        ...

"""What a run reports while it goes: `EventKind` and `Event`.

The loop calls an `EventSink` with each event; the CLI renders them (a live trace or
JSON lines). This module never writes to the terminal. `EventKind` may grow: consumers
must ignore kinds they do not know.

Every `--json` line's shape is a JSON Schema shipped with the package
(`harness_core/schemas/events.schema.json`, read by `event_json_schema`): a new kind
or field is added there, under `$defs/<kind>`, with its description
(docs/guide/events.md is made from it).
"""

from __future__ import annotations

from dataclasses import field
from enum import Enum
from typing import Any, Protocol

from harness_core._record import record

__all__ = ["EVENT_SCHEMA", "Event", "EventKind", "EventSink", "event_json_schema"]

EVENT_SCHEMA = 1
"""Version of the JSON-lines event shape; bumped only on an incompatible change."""


class EventKind(Enum):
    """Kinds of event. This set may grow; ignore unknown kinds."""

    RUN_STARTED = "run_started"
    """A run began or resumed (data: goal, resumed, workspace, sandbox, parent_run_id)."""
    STEP_STARTED = "step_started"
    """A step is about to ask the provider (data: step)."""
    TOKEN = "token"
    """A provisional streamed text delta (data: text). Render it; do not act on it."""
    COMPLETION = "completion"
    """The provider answered (data: step, text, model (served), provider, request_model,
    usage, latency_ms, ttft_ms, tool_calls)."""
    TOOL_CALL = "tool_call"
    """A tool call is about to run (data: call_id, name, arguments)."""
    TOOL_RESULT = "tool_result"
    """A tool call's observation (data: call_id, name, output, is_error)."""
    REFUSAL = "refusal"
    """The policy refused an act (data: act, target, reason, rule, layer)."""
    APPROVAL = "approval"
    """An approver decided an act (data: act, target, decision, by)."""
    QUESTION = "question"
    """The agent asked the operator (data: question, answer?)."""
    PLAN = "plan"
    """The agent replaced its plan (data: items)."""
    STEER = "steer"
    """An operator message reached the run (data: text)."""
    CHECKPOINT = "checkpoint"
    """A step committed (data: step)."""
    VERIFICATION = "verification"
    """A verification gate ran (data: command, passed, exit_status, output)."""
    STALL = "stall"
    """The stall detector saw repetition (data: call)."""
    WARNING = "warning"
    """Something the operator should know that did not stop the run (data: mcp, text)."""
    HOOK = "hook"
    """A configured hook answered with something to say (data: event, hook, step, act,
    target, verdict, reason, rule, layer, context); a refused call is a `refusal`."""
    SPAWN = "spawn"
    """A child run started or ended (data: child_run_id, agent, depth, step, call_index,
    status on the end)."""
    COMPACTION = "compaction"
    """The history was summarised (data: step, phase "started" (size, threshold) then
    "done" (seq, size_before, size_after, threshold, summarised_messages, model, usage,
    latency_ms))."""
    ANSWER_REJECTED = "answer_rejected"
    """A final answer did not match `--output-schema` (data: step, problem, attempt,
    retries_left): it goes back to the model, or the run fails when no retry is left."""
    RUN_FINISHED = "run_finished"
    """The run ended, however it ended (data: status, reason, steps). The loop emits it
    once per drive; the CLI's `--json` stream writes its own closing line instead, with
    `exit_code` added."""


@record
class Event:
    """One thing that happened in a run.

    Attributes:
        kind: What happened.
        run_id: The run it happened in.
        data: JSON-serialisable details; keys depend on the kind.
        root_run_id: The root of the run's tree (None: the run is its own root).
    """

    kind: EventKind
    run_id: str
    data: dict[str, Any] = field(default_factory=lambda: {})
    root_run_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON-lines form: `schema`, `kind`, `run_id`, `root_run_id`, then the data."""
        out: dict[str, Any] = {"schema": EVENT_SCHEMA, "kind": self.kind.value,
                               "run_id": self.run_id,
                               "root_run_id": self.root_run_id or self.run_id}
        for key, value in self.data.items():
            if key not in out:
                out[key] = value
        return out


class EventSink(Protocol):
    """Receives events as a run produces them."""

    def __call__(self, event: Event) -> None: ...


def event_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of every `--json` line io writes: each event
    kind's fields under `$defs/<kind>`, `run_finished` and the `batch_*` lines included.

    Returns:
        A fresh copy of the schema (the caller may change it).
    """
    import json
    from importlib.resources import files

    text = files("harness_core").joinpath("schemas", "events.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema

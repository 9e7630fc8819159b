"""One step's ledger writes, in the order they commit.

The order is the at-most-once rule, and this is the one place that writes it:

1. **intent**: a tool call's intent commits before the call runs (`StepWrites.intent`);
2. **observation**: its outcome commits after it ran (`StepWrites.observation`);
3. **checkpoint**: the step's checkpoint, with its budget draw, commits last
   (`StepWrites.checkpoint`).

The step's completion committed before any of these (`Asker.complete`). When the step's
last call runs on the sequential path (not a `spawn_agent`), its observation and the
checkpoint commit in one transaction instead of two: the same order of effects, one
fsync fewer. A step that stops inside (a stall, a pause) gets no checkpoint.

A resume reads these back: an observation means the call is never run again, an intent
alone means its outcome is unknown (`Actor.run_call`).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_core.clock import Clock
from harness_core.messages import ToolCall, ToolResult
from harness_core.records import Edit
from harness_core.store import CheckpointState, Store
from harness_core.tool_data import Refusal, ToolData

__all__ = ["StepWrites"]


class StepWrites:
    """The writes of step `step` of run `run_id`, for a step that draws `tokens` and
    whose wall time counts from `started` (the clock's monotonic reading)."""

    def __init__(self, store: Store, clock: Clock, run_id: str, step: int, *,
                 tokens: int, started: float, calls: Sequence[ToolCall]) -> None:
        self._store = store
        self._clock = clock
        self.run_id = run_id
        self.step = step
        self.tokens = tokens
        self._started = started
        # The call whose observation carries the checkpoint: the last, unless it is a
        # spawn (a child's observation lands when the child ends, maybe in parallel).
        last = len(calls) - 1
        self._carrier: int | None = (
            last if calls and calls[last].name != "spawn_agent" else None)
        self.committed_at: float | None = None
        """When the checkpoint committed (None: not yet)."""

    # ---- 1. intent ------------------------------------------------------------------

    def intent(self, index: int, call: ToolCall) -> None:
        """Call `index`'s intent: committed before the call runs."""
        self._store.record_intent(self.run_id, self.step, index, call)

    # ---- 2. observation -------------------------------------------------------------

    def observation(self, index: int, result: ToolResult, *, data: ToolData | None,
                    refused: Refusal | None, edits: Sequence[Edit],
                    progress: str | None) -> None:
        """Call `index`'s observation: committed after the call ran. The step's last
        call carries the step's checkpoint in the same transaction."""
        if index != self._carrier or self.committed_at is not None:
            self._store.record_observation(self.run_id, self.step, index, result, data=data,
                                           refused=refused, edits=edits, progress=progress)
            return
        now = self._clock.monotonic()
        self._store.record_observation(
            self.run_id, self.step, index, result, data=data, refused=refused, edits=edits,
            checkpoint=CheckpointState(self.step, done=False), tokens=self.tokens,
            wall_seconds=now - self._started, progress=progress)
        self.committed_at = now

    def hold(self) -> None:
        """The step stops inside (a stall): no observation carries a checkpoint."""
        self._carrier = None

    # ---- 3. checkpoint --------------------------------------------------------------

    def checkpoint(self, *, done: bool) -> float:
        """The step's checkpoint and budget draw, committed last (unless the last
        observation carried it). Returns when it committed."""
        if self.committed_at is not None:
            return self.committed_at
        now = self._clock.monotonic()
        self._store.record_checkpoint(self.run_id, self.step,
                                      CheckpointState(self.step, done=done),
                                      tokens=self.tokens, wall_seconds=now - self._started)
        self.committed_at = now
        return now

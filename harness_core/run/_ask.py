"""Asking the model: the budget check before a step, compaction of the history, the
completion (continued across `pause_turn`) recorded before any call runs, and the cost
each completion draws. A completion whose provider reported no counts is recorded with
an estimate (`_estimate`), and a cost budget that meets a call it cannot price stops
the run at the next step rather than going on unbounded: no budget fails open."""

from __future__ import annotations

from dataclasses import fields, replace

from harness_core.errors import ProviderError
from harness_core.events import Event, EventKind
from harness_core.messages import Message, Usage
from harness_core.providers import CompletionRequest, CompletionResponse, ProviderAttempt
from harness_core.run._drive_state import _Drive, _Stop
from harness_core.run._estimate import with_estimate
from harness_core.run._parts import RunParts
from harness_core.store import RunStatus

__all__ = ["Asker", "_continued"]


class Asker:
    """Asking the model for a step's completion, and drawing what it cost."""

    def __init__(self, parts: RunParts) -> None:
        self.parts = parts

    def draw_cost(self, drive: _Drive, model: str, usage: Usage, *, fresh: bool = False) -> None:
        """Add a completion's derived cost (never stored; prices are the operator's); a
        `fresh` one (not replayed) is drawn from the tree's budget too."""
        if drive.spec.cost_of is None or drive.spec.budget.max_cost_usd is None:
            return
        cost = drive.spec.cost_of(model, usage)
        if cost is not None:
            drive.cost_used += cost
            if fresh:
                drive.tree.budget.add(cost=cost)
        elif not drive.unpriced_warned:
            # Fail closed: a cost that cannot be derived cannot be bounded, so the run
            # stops at the next step boundary (`check_budget`) instead of going on.
            drive.unpriced_warned = True
            drive.unpriced_model = model
            self.parts.emit(Event(EventKind.WARNING, drive.run_id, {
                "text": f"model {model!r} has no price in [prices]: max_cost_usd cannot be"
                        " enforced, so the run stops before its next step"}))

    def prior_cost(self, drive: _Drive, before_step: int) -> None:
        """Draw what a resumed run spent before this drive: the completions of the steps
        before `before_step` (the step it resumes in replays its own completion) and
        every summary already made, the resumed step's included (a replayed step asks
        for no summary, so nothing else would draw it)."""
        if drive.spec.cost_of is None or drive.spec.budget.max_cost_usd is None:
            return
        for record in self.parts.store.steps(drive.run_id):
            if record.step_index < before_step:
                self.draw_cost(drive, record.model_served or drive.spec.model,
                                record.usage)
        for summary in drive.compactor.records if drive.compactor else ():
            self.draw_cost(drive, summary.model_served, summary.usage)

    def compact(self, drive: _Drive, step: int) -> None:
        """Summarise the history first when this step's request would pass the
        `compact` strategy's threshold (a recorded step of its own; `_compact`)."""
        assert drive.compactor is not None
        try:
            made = drive.compactor.before_request(step, drive.context)
        except ProviderError as exc:
            raise _Stop(RunStatus.ERRORED, f"provider (compaction): {exc}") from exc
        if made is not None:
            self.draw_cost(drive, made.model_served, made.usage, fresh=True)

    def check_budget(self, drive: _Drive, step: int) -> None:
        budget = drive.spec.budget
        if budget.max_cost_usd is not None and drive.unpriced_model is not None:
            raise _Stop(RunStatus.STOPPED,
                        f"budget: the cost budget of ${budget.max_cost_usd:g} cannot be"
                        f" enforced: model {drive.unpriced_model!r} has no price in [prices]")
        if budget.max_cost_usd is not None and drive.cost_used >= budget.max_cost_usd:
            raise _Stop(RunStatus.STOPPED,
                        f"budget: the cost budget of ${budget.max_cost_usd:g} is spent"
                        f" (${drive.cost_used:.4f} derived from [prices])")
        if budget.max_steps is not None and step >= budget.max_steps:
            raise _Stop(RunStatus.STOPPED, f"budget: the step budget of {budget.max_steps} is spent")
        if budget.max_tokens is not None and drive.tokens_used >= budget.max_tokens:
            raise _Stop(RunStatus.STOPPED,
                        f"budget: the token budget of {budget.max_tokens} is spent"
                        f" ({drive.tokens_used} used)")
        elapsed = drive.wall_before + (self.parts.clock.monotonic() - drive.started)
        if budget.wall_seconds is not None and elapsed >= budget.wall_seconds:
            raise _Stop(RunStatus.STOPPED,
                        f"budget: the wall-clock budget of {budget.wall_seconds:g}s is spent")
        spent = drive.tree.budget.take_step(budget, self.parts.clock.monotonic())
        if spent is not None:
            raise _Stop(RunStatus.STOPPED, spent)

    def complete(self, drive: _Drive, step: int) -> CompletionResponse:
        self.parts.emit(Event(EventKind.STEP_STARTED, drive.run_id, {"step": step}))
        spec = drive.spec
        request = CompletionRequest(
            model=spec.model, messages=drive.context.view(), tools=drive.toolbox.specs(),
            max_tokens=spec.max_tokens, web=spec.web,
            # A session's turns repeat its conversation: one key for all of them.
            cache_key=spec.session_id or drive.run_id,
        )

        def on_token(text: str) -> None:
            self.parts.emit(Event(EventKind.TOKEN, drive.run_id, {"text": text, "step": step}))

        began = self.parts.clock.monotonic()
        try:
            response = self.parts.provider.complete(request, step=step, on_token=on_token)
            # Anthropic's `pause_turn`: the vendor stopped a long server-tool turn early and
            # expects it continued. Ask again (what it said so far as the assistant's
            # prefix) and keep one merged completion for the step, so the step is not
            # mistaken for "done" and the record stays one row per step.
            for _ in range(_MAX_PAUSE_TURNS):
                if response.stop_reason != "pause_turn" or response.tool_calls:
                    break
                prefix = response.text.rstrip()
                messages = request.messages + ((Message.assistant(prefix),) if prefix else ())
                more = self.parts.provider.complete(replace(request, messages=messages), step=step,
                                              on_token=on_token)
                response = _continued(response, more)
        except ProviderError as exc:
            failed = exc.attempts or tuple(getattr(self.parts.provider, "last_attempts", ()) or ())
            self.parts.store.record_failed_attempts(drive.run_id, step, [
                ProviderAttempt.of(a) for a in failed])
            raise _Stop(RunStatus.ERRORED, f"provider: {exc}") from exc
        response = with_estimate(request, response)
        latency = response.latency_ms or (self.parts.clock.monotonic() - began) * 1000.0
        self.parts.store.record_completion(
            drive.run_id, step, text=response.text, tool_calls=response.tool_calls,
            provider=response.provider or self.parts.provider.name, model_requested=spec.model,
            model_served=response.model or spec.model, usage=response.usage,
            latency_ms=latency, ttft_ms=response.ttft_ms, stop_reason=response.stop_reason,
            attempts=response.attempts, citations=response.citations,
            server_tool_calls=response.server_tool_calls, carry=response.carry,
        )
        drive.context.append(Message.assistant(response.text, response.tool_calls))
        if drive.compactor is not None:
            drive.compactor.counted(response.usage, len(request.messages))
        self.parts.emit(Event(EventKind.COMPLETION, drive.run_id, {
            "step": step, "text": response.text, "model": response.model,
            "provider": response.provider or self.parts.provider.name, "request_model": spec.model,
            "usage": response.usage.to_json(), "latency_ms": round(latency, 3),
            "ttft_ms": response.ttft_ms, "tool_calls": len(response.tool_calls),
        }))
        return response


_MAX_PAUSE_TURNS = 8
"""Continuations of one `pause_turn` step before the step is taken as it stands."""


def _continued(first: CompletionResponse, more: CompletionResponse) -> CompletionResponse:
    """One step's completion from a paused turn and its continuation."""
    def add(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    counts: dict[str, int | None] = {f.name: add(getattr(first.usage, f.name),
                                          getattr(more.usage, f.name))
                              for f in fields(Usage) if f.name != "estimated"}
    usage = Usage(**counts, estimated=first.usage.estimated or more.usage.estimated)
    return replace(
        more, text=first.text + more.text, usage=usage,
        latency_ms=first.latency_ms + more.latency_ms,
        ttft_ms=first.ttft_ms if first.ttft_ms is not None else more.ttft_ms,
        citations=first.citations + more.citations,
        server_tool_calls=first.server_tool_calls + more.server_tool_calls,
        attempts=first.attempts + more.attempts,
    )

"""Compaction: past a share of the model's context window, the model summarises the
older turns and the summary replaces them in what it is sent.

`Compactor` measures the history before every request: the provider's own count of
the last request (its prompt tokens plus the tokens it answered with) plus an estimate
of what was appended since, or an estimate of the whole view when no count is known.
When the next request would pass `compact_threshold` of the window, it asks the model
for a summary (a ``compact`` request, no tools), records it in the store, and only then
rebuilds the view: the opening messages (system prompt, earlier turns, the goal), the
summary, then the newest `compact_keep_steps` steps whole. A cut always falls before an
assistant message, so no tool call is parted from its result. The store's conversation
is never changed; a resumed run rebuilds the view from the last recorded compaction, so
a kill after the record costs no second summary. Nothing here writes to the terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING

from harness_core._record import record
from harness_core.errors import ConfigError
from harness_core.events import Event, EventKind
from harness_core.messages import Message, Role, Usage
from harness_core.providers import CompletionRequest, Provider
from harness_core.run._context import ContextBudget, estimate_tokens
from harness_core.run._estimate import with_estimate
from harness_core.run._spec import RunSpec
from harness_core.run._windows import context_window_of
from harness_core.store import Store
from harness_core.store._compactions import CompactionRecord

if TYPE_CHECKING:
    from harness_core.hooks import CompactVerdict, HookRunner

__all__ = [
    "DEFAULT_COMPACT_PROMPT", "Compactor", "compaction_window", "inherited_compactions",
    "summary_message",
]

DEFAULT_COMPACT_PROMPT = """\
The conversation above is about to be shortened: everything before your most recent \
steps will be replaced by the summary you write now. Write that summary for yourself, \
to carry on the task without the original messages. Include:
- the goal and every constraint or instruction the operator gave, word for word;
- what you have done so far, step by step, and what each tool call showed that still \
matters (file names, function names, error messages, test results);
- every file you created or changed, and how;
- decisions taken and why, approaches that failed and why;
- what remains to be done, in order.
Do not call any tool. Reply with the summary only."""
"""The instruction a summary is asked under; `[context] compact_template` replaces it
(a template in the template directories; `{{goal}}` is the run's goal)."""

SUMMARY_PREFIX = ("[summary of the earlier conversation, written by you when it was"
                  " compacted; the full history is kept in io's store]\n\n")


def summary_message(summary: str) -> Message:
    """The message a summary stands as in the view."""
    return Message.user(SUMMARY_PREFIX + summary)


def compaction_window(spec: RunSpec) -> int:
    """The context window the threshold of `spec` is a share of.

    Raises:
        ConfigError: The model is not in io's table and `[context] window` is not set.
    """
    window = spec.context_window or context_window_of(spec.model)
    if window is None:
        raise ConfigError(
            f'[context] strategy = "compact" needs the context window of model'
            f" {spec.model!r}, which io does not know",
            hint="set [context] window = TOKENS (the model's context window)")
    return window


@record(frozen=False)
class _Meter:
    """The history's size: a provider count, plus estimates of what came after it."""

    counted: int | None = None
    counted_len: int = 0

    def size(self, view: tuple[Message, ...]) -> int:
        if self.counted is None or self.counted_len > len(view):
            return sum(estimate_tokens(m) for m in view)
        return self.counted + sum(estimate_tokens(m) for m in view[self.counted_len:])


@record(frozen=False)
class Compactor:
    """Decides, asks for, records and applies compactions for one drive of a run.

    Args:
        store: Where compactions are recorded (and read back on resume).
        provider: Asked for the summaries.
        run_id: The run.
        spec: Its strategy, threshold, window, prompt and kept steps.
        emit: Where compaction events go.
    """

    store: Store
    provider: Provider
    run_id: str
    spec: RunSpec
    emit: Callable[[Event], None]
    records: list[CompactionRecord] = field(default_factory=lambda: [])
    head: int = 0
    meter: _Meter = field(default_factory=_Meter)
    hooks: HookRunner | None = None
    """The run's hooks: `pre_compact` ones are asked before every summary."""

    @property
    def enabled(self) -> bool:
        return self.spec.context_strategy == "compact"

    @property
    def threshold(self) -> int:
        return int(compaction_window(self.spec) * self.spec.compact_threshold)

    def open(self, context: ContextBudget, messages: list[Message], head: int) -> None:
        """Fill `context` from the run's whole conversation, as the last recorded
        compaction left the view (`head`: the run's opening messages)."""
        self.head = head
        self.records = inherited_compactions(self.store, self.run_id) if self.enabled else []
        if self.records:
            last = self.records[-1]
            messages = [*messages[:last.head], summary_message(last.summary),
                        *messages[last.cut:]]
        context.extend(messages)
        if self.enabled:
            self._resume_meter(messages)

    def _resume_meter(self, view: list[Message]) -> None:
        """Take the size of the history from the last recorded step's usage, when no
        compaction came after it (otherwise the size is estimated)."""
        steps = self.store.steps(self.run_id)
        if not steps or (self.records and self.records[-1].step_index > steps[-1].step_index):
            return
        last = max((i for i, m in enumerate(view) if m.role is Role.ASSISTANT), default=None)
        if last is not None:
            self.counted(steps[-1].usage, last)

    def counted(self, usage: Usage, view_len: int) -> None:
        """A step's completion answered: its usage counts the history (the request's
        `view_len` messages and its answer)."""
        if usage.prompt_tokens is None or usage.estimated:  # it estimates the view itself
            self.meter = _Meter()
            return
        self.meter = _Meter(usage.prompt_tokens + (usage.completion_tokens or 0), view_len + 1)

    def billed(self, step: int, cache_read_weight: float) -> int:
        """Tokens the compactions made before `step` drew (added to the step's draw)."""
        return sum(r.usage.billed_tokens(cache_read_weight) for r in self.records
                   if r.step_index == step)

    def before_request(self, step: int, context: ContextBudget) -> CompactionRecord | None:
        """Compact when the request of `step` would pass the threshold.

        Returns:
            The compaction made, or None (not needed, or nothing old enough to summarise).

        Raises:
            ProviderError: The summary could not be had (nothing was recorded).
        """
        if not self.enabled:
            return None
        view = context.view()
        size, threshold = self.meter.size(view), self.threshold
        if size <= threshold:
            return None
        start = self.head + (1 if self.records else 0)
        cut_view = _cut(view, start, self.spec.compact_keep_steps)
        if cut_view is None:
            return None
        self.emit(Event(EventKind.COMPACTION, self.run_id, {
            "step": step, "phase": "started", "size": size, "threshold": threshold}))
        verdict = self.pre_compact(step, len(view), size)
        if not verdict.proceed:
            self.emit(Event(EventKind.COMPACTION, self.run_id, {
                "step": step, "phase": "refused", "size": size, "threshold": threshold,
                "reason": verdict.reason}))
            return None
        record = self._summarise(step, view, cut_view, size, threshold,
                                 instructions=verdict.instructions)
        context.reset([*view[:self.head], summary_message(record.summary), *view[cut_view:]])
        self.meter = _Meter()
        self.emit(Event(EventKind.COMPACTION, self.run_id, {
            "step": step, "phase": "done", "seq": record.seq, "size_before": size,
            "size_after": self.meter.size(context.view()), "threshold": threshold,
            "summarised_messages": cut_view - start, "model": record.model_served,
            "usage": record.usage.to_json(), "latency_ms": round(record.latency_ms, 3)}))
        return record

    def pre_compact(self, step: int, messages: int, size: int) -> CompactVerdict:
        """Ask the run's `pre_compact` hooks before a summary is asked for: a hook only
        narrows (its refusal skips this compaction, and elision does not stand in), and
        its context is added to the summary's instructions."""
        from harness_core.hooks import CompactVerdict

        if self.hooks is None:
            return CompactVerdict()
        return self.hooks.pre_compact(step, messages=messages, tokens=size)

    def _full_index(self, view_index: int) -> int:
        """The index in the run's whole conversation of view message `view_index`."""
        if not self.records:
            return view_index
        last = self.records[-1]
        return last.cut + (view_index - self.head - 1)

    def _summarise(self, step: int, view: tuple[Message, ...], cut_view: int, size: int,
                   threshold: int, *, instructions: str = "") -> CompactionRecord:
        spec = self.spec
        prompt = spec.compact_prompt or DEFAULT_COMPACT_PROMPT
        if instructions:
            prompt = f"{prompt}\n\n{instructions}"
        request = CompletionRequest(model=spec.model, messages=(*view, Message.user(prompt)),
                                    max_tokens=spec.max_tokens, purpose="compact",
                                    cache_key=spec.session_id or self.run_id)
        response = with_estimate(request, self.provider.complete(request, step=step))
        full_cut = self._full_index(cut_view)
        record = self.store.record_compaction(
            self.run_id, step, head=self.head, cut=full_cut, summary=response.text,
            size_before=size, threshold=threshold,
            provider=response.provider or self.provider.name, model_requested=spec.model,
            model_served=response.model or spec.model, usage=response.usage,
            latency_ms=response.latency_ms)
        self.records.append(record)
        return record


def inherited_compactions(store: Store, run_id: str) -> list[CompactionRecord]:
    """The run's compactions, after those of the run it was rewound from that came before
    the step it branched at (`io rewind`: the branch holds the same first messages)."""
    own = store.compactions(run_id)
    rewound = store.run(run_id).settings.get("rewound_from")
    if not isinstance(rewound, dict):
        return own
    step = int(rewound.get("step", 0))
    parent = [r for r in inherited_compactions(store, str(rewound.get("run_id")))
              if r.step_index < step]
    return parent + own


def _cut(view: tuple[Message, ...], start: int, keep_steps: int) -> int | None:
    """Where the kept part of `view` begins: the assistant message that opens the
    `keep_steps`-th newest step; None when nothing before it is left to summarise."""
    seen = 0
    for index in range(len(view) - 1, start - 1, -1):
        if view[index].role is Role.ASSISTANT:
            seen += 1
            if seen == max(keep_steps, 1):
                return index if index > start else None
    return None

"""The live terminal view of `io run` on a TTY: a compact rich panel under the scrolling trace.

The panel shows the current step, the time elapsed, tokens and cost so far, what is
running (the model or a tool, with a spinner) and the agent's plan; the full trace keeps
scrolling above it, so the scrollback holds every line once the panel is gone. Only the
CLI draws it, and only when stderr is a colour terminal (not NO_COLOR, not TERM=dumb, not
`--json`); everything else gets the plain lines of `lines.PlainTrace`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import field
from typing import TYPE_CHECKING, Any

from harness_core import record
from io_harness_cli.render.lines import FinalText, RefusedOnce, brief, lines_for

if TYPE_CHECKING:
    from rich.console import RenderableType

    from harness_core import Event, PriceTable

__all__ = ["LiveTrace", "PanelState"]

_PLAN_ROWS = 8
_MARKS = {"done": "☑", "in_progress": "▶", "pending": "☐"}
_REDRAW = frozenset({"run_started", "step_started", "completion", "tool_call", "tool_result",
                     "plan", "verification", "refusal"})
"""Kinds after which the panel is redrawn at once (tokens wait for the next tick)."""


@record(frozen=False)
class PanelState:
    """What the panel shows, folded from the run's events."""

    run_id: str = ""
    current: str = ""
    started: float = field(default_factory=time.monotonic)
    step: int | None = None
    tokens: int = 0
    cost: float = 0.0
    priced: bool = False
    unpriced_calls: int = 0
    running: str | None = None
    running_since: float = 0.0
    provisional: str = ""
    plan: list[dict[str, Any]] = field(default_factory=lambda: [])
    prices: PriceTable | None = None

    def fold(self, event: Event) -> None:
        """Take one event into the state."""
        kind, d = event.kind.value, event.data
        self.run_id = self.run_id or event.run_id  # the root: a tree's children report too
        self.current = event.run_id
        if kind == "step_started":
            self.step = d.get("step")
            self._run(f"model (step {self.step})")
            self.provisional = ""
        elif kind == "token":
            self.provisional = (self.provisional + str(d.get("text", "")))[-400:]
        elif kind == "completion":
            self._completion(d)
        elif kind == "tool_call":
            self._run(f"{d.get('name')} {brief(d.get('arguments'), 60)}")
        elif kind == "tool_result":
            self.running = None
        elif kind == "plan":
            items = d.get("items")
            self.plan = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    def _run(self, what: str) -> None:
        self.running = what
        self.running_since = time.monotonic()

    def _completion(self, d: dict[str, Any]) -> None:
        from harness_core import Usage

        self.running = None
        self.provisional = ""
        usage = Usage.from_json(d.get("usage") or {})
        self.tokens += usage.billed_tokens()
        price = self.prices.price_for(str(d.get("model"))) if self.prices is not None else None
        cost = price.cost_of(usage) if price is not None else None
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.priced = True
            self.cost += cost

    def cost_text(self) -> str:
        """The cost so far, marked as a floor when some calls had no price."""
        if self.prices is None:
            return "cost: no [prices]"
        if self.unpriced_calls and not self.priced:
            return f"cost unpriced ({self.unpriced_calls} calls)"
        amount = f"${self.cost:.6f}" if 0 < self.cost < 0.01 else f"${self.cost:.4f}"
        if self.unpriced_calls:
            return f"cost ≥ {amount} ({self.unpriced_calls} unpriced)"
        return f"cost {amount}"


class _Panel:
    """Rebuilt on every refresh, so the elapsed time and the spinner move on their own."""

    def __init__(self, state: PanelState) -> None:
        from rich.spinner import Spinner

        self.state = state
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> RenderableType:
        from rich.console import Group
        from rich.panel import Panel
        from rich.text import Text

        s = self.state
        now = time.monotonic()
        head = Text.assemble(
            (f"step {s.step if s.step is not None else '-'}", "bold"),
            f" · {now - s.started:.1f}s elapsed · tokens {s.tokens:,} · {s.cost_text()}")
        rows: list[RenderableType] = [head]
        if s.current and s.current != s.run_id:
            rows.append(Text(f"in child run {s.current}", style="cyan"))
        if s.running is not None:
            self.spinner.update(text=Text(f"running {s.running}  ({now - s.running_since:.1f}s)"))
            rows.append(self.spinner)
        if s.provisional.strip():
            rows.append(Text("(provisional) " + brief(s.provisional.splitlines()[-1], 100),
                             style="dim italic"))
        if s.plan:
            rows.append(Text("plan", style="bold"))
            for item in s.plan[:_PLAN_ROWS]:
                status = str(item.get("status"))
                rows.append(Text(f"  {_MARKS.get(status, '☐')} {brief(item.get('content'), 90)}",
                                 style="dim" if status == "done" else ""))
            if len(s.plan) > _PLAN_ROWS:
                rows.append(Text(f"  … {len(s.plan) - _PLAN_ROWS} more", style="dim"))
        return Panel(Group(*rows), title=f"io run {s.run_id}", title_align="left",
                     border_style="blue", expand=False)


class LiveTrace:
    """Trace lines above, the live panel below (stderr must be a terminal)."""

    def __init__(self, *, answer_shown: bool = False) -> None:
        from rich.console import Console

        self._final = FinalText(answer_shown)
        self._refused = RefusedOnce()
        self._console = Console(stderr=True, highlight=False)
        self.state = PanelState()
        self._panel = _Panel(self.state)
        self._live: Any = None
        self._start = time.monotonic()

    def set_prices(self, prices: PriceTable | None) -> None:
        """Price completions for the panel's cost (from the run's `[prices]`)."""
        self.state.prices = prices

    def __call__(self, event: Event) -> None:
        from rich.text import Text

        first_token = event.kind.value == "token" and not self.state.provisional
        # Hold the live display's own lock while printing: its refresh thread must not
        # redraw the panel between a line's rendering and its writing, or the panel's
        # last shape is wrong and a border is left behind in the scrollback.
        with self._live._lock if self._live is not None else nullcontext():
            self.state.fold(event)
            lines = self._refused.take(event, lines_for(event, self.state.run_id))
            if event.run_id == self.state.run_id:
                lines = self._final.take(event, lines)
            for text, style in lines:
                self._console.print(Text(f"[{time.monotonic() - self._start:7.2f}s] {text}",
                                         style=style))
        if self._live is None:
            self._begin()
        elif event.kind.value in _REDRAW or first_token:
            self._live.refresh()

    def _begin(self) -> None:
        from rich.live import Live

        self._live = Live(self._panel, console=self._console, refresh_per_second=8,
                          transient=True, redirect_stdout=False, redirect_stderr=False)
        self._live.start(refresh=True)

    def stop(self) -> None:
        """Clear the panel (the trace lines stay in the scrollback)."""
        self._final.drop()
        if self._live is not None:
            self._live.stop()
            self._live = None

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Take the panel down while the operator is prompted, then put it back."""
        live = self._live
        if live is None:
            yield
            return
        live.stop()
        try:
            yield
        finally:
            live.start(refresh=True)

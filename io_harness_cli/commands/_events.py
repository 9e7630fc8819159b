"""Where a run's events go from the CLI: JSON lines on stdout (`--json`) or the human
trace on stderr, and the one closing `run_finished` line however the run ends."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from io_harness_cli.output import (
    answer_beside_trace,
    drop,
    say,
    use_color,
    use_live,
    write_json,
)

RUN_FINISHED_WRITTEN = False
"""Whether this process wrote the `run_finished` line (`run_app` writes one otherwise)."""

if TYPE_CHECKING:
    from harness_core import Config, Event, TelemetrySink

__all__ = ["RUN_FINISHED_WRITTEN", "EventOutput"]

_LABELS = {0: "finished", 3: "stopped", 4: "paused", 5: "busy", 130: "interrupted"}


class EventOutput:
    """Sends events to the JSON-lines writer or the human trace, and remembers the run id."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.run_id: str | None = None
        self.finished = False
        self.status: str | None = None
        """How the run ended, once `finish` was called (`RunStatus` value, or `error`)."""
        self.config: Config | None = None
        self._human: Callable[[Event], None] | None = None
        self._sinks: list[TelemetrySink] = []
        if not json_mode:
            from io_harness_cli.render import make_renderer

            self._human = make_renderer(color=use_color(sys.stderr), live=use_live(),
                                        answer_shown=answer_beside_trace())

    def configure(self, config: Config) -> None:
        """Keep the run's config (its store and `[prices]` serve the reports), give the
        live view its prices and start the OpenTelemetry export when `[telemetry]` (or
        `OTEL_*`) asks for it."""
        self.config = config
        set_prices = getattr(self._human, "set_prices", None)
        if callable(set_prices):
            set_prices(config.prices)
        if config.telemetry is not None and not self._sinks:
            from harness_core import TelemetrySink

            self._sinks.append(TelemetrySink(config.telemetry, redact=config.redact))

    def __call__(self, event: Event) -> None:
        self.run_id = event.root_run_id or event.run_id  # a child's event names its root
        if self.json_mode:
            if event.kind.value != "run_finished":  # `finish` writes the one closing line
                write_json(event.to_json())
        elif self._human is not None:
            try:
                self._human(event)
            except BrokenPipeError:  # stderr's reader has gone: the run goes on unseen
                drop(sys.stderr)
        for sink in self._sinks:
            sink(event)

    def stop_display(self) -> None:
        """Take the live panel down (before anything else is written to the terminal) and
        flush the telemetry export."""
        stop = getattr(self._human, "stop", None)
        if callable(stop):
            try:
                stop()
            except BrokenPipeError:
                drop(sys.stderr)
        sinks, self._sinks = self._sinks, []
        for sink in sinks:
            sink.close()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Keep the terminal still while the operator is prompted."""
        hold = getattr(self._human, "hold", None)
        if not callable(hold):
            yield
            return
        with hold():
            yield

    def finish(self, status: str, code: int, reason: str, why: str, **extra: Any) -> None:
        """Write the closing `run_finished` event (once): the exit code and why."""
        if self.status is None:
            self.status = status
        if self.finished:
            return
        self.finished = True
        global RUN_FINISHED_WRITTEN
        if self.json_mode:
            RUN_FINISHED_WRITTEN = True
            from harness_core import EVENT_SCHEMA

            write_json({"schema": EVENT_SCHEMA, "kind": "run_finished", "run_id": self.run_id,
                        "root_run_id": self.run_id, "status": status, "exit_code": code,
                        "reason": reason, "why": why, **extra})
        else:
            label = _LABELS.get(code, status)
            said = reason if why in reason else why if reason in why else f"{reason}; {why}"
            say(f"io: run {self.run_id or '-'} {label} (exit {code}): {said}")

"""Drive a run from the CLI (`io run`, `io resume`, `io session turn`): events out,
exit code back, and a `run_finished` line however the run ends."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from io_harness_cli.exit_codes import ExitCode, exit_code_for_error, exit_code_for_status
from io_harness_cli.output import error, say, use_color, use_live, write_json

RUN_FINISHED_WRITTEN = False
"""Whether this process wrote the `run_finished` line (`run_app` writes one otherwise)."""

if TYPE_CHECKING:
    from harness_core import Config, Event, RunOutcome, TelemetrySink


class EventOutput:
    """Sends events to the JSON-lines writer or the human trace, and remembers the run id."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.run_id: str | None = None
        self.finished = False
        self._human: Callable[[Event], None] | None = None
        self._sinks: list[TelemetrySink] = []
        if not json_mode:
            from io_harness_cli.render import make_renderer

            self._human = make_renderer(color=use_color(sys.stderr), live=use_live())

    def configure(self, config: Config) -> None:
        """Give the live view the run's `[prices]` (its cost so far is derived from them)
        and start the OpenTelemetry export when `[telemetry]` (or `OTEL_*`) asks for it."""
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
            self._human(event)
        for sink in self._sinks:
            sink(event)

    def stop_display(self) -> None:
        """Take the live panel down (before anything else is written to the terminal) and
        flush the telemetry export."""
        stop = getattr(self._human, "stop", None)
        if callable(stop):
            stop()
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

    def finish(self, status: str, code: int, reason: str, **extra: Any) -> None:
        """Write the closing `run_finished` event (once)."""
        if self.finished:
            return
        self.finished = True
        global RUN_FINISHED_WRITTEN
        if self.json_mode:
            RUN_FINISHED_WRITTEN = True
            from harness_core import EVENT_SCHEMA

            write_json({"schema": EVENT_SCHEMA, "kind": "run_finished", "run_id": self.run_id,
                        "root_run_id": self.run_id, "status": status, "exit_code": code,
                        "reason": reason, **extra})
        else:
            label = {0: "finished", 3: "stopped", 4: "paused", 130: "interrupted"}.get(code, status)
            say(f"io: run {self.run_id or '-'} {label} (exit {code}): {reason}")


def drive(out: EventOutput, body: Callable[[], RunOutcome]) -> int:
    """Run `body`, map its outcome or error to an exit code, always close with run_finished."""
    from harness_core import HarnessError
    from io_harness_cli.commands._common import hint_for, sigterm_as_interrupt

    restore = sigterm_as_interrupt()
    try:
        try:
            outcome = body()
        finally:
            out.stop_display()
    except HarnessError as exc:
        code = int(exit_code_for_error(exc))
        status = "error" if code == ExitCode.USAGE else "errored"
        if not out.json_mode:
            error(exc.message, hint_for(exc))
            out.finished = True  # the error line said it all: one message, not two
        else:
            hint = hint_for(exc)
            sys.stderr.write(f"io: error: {exc.message}\n" + (f"hint: {hint}\n" if hint else ""))
        out.finish(status, code, exc.message)
        return code
    except KeyboardInterrupt:
        out.finish("interrupted", int(ExitCode.INTERRUPTED), "interrupted")
        return int(ExitCode.INTERRUPTED)
    except BaseException as exc:
        out.finish("errored", int(ExitCode.FAILED), f"internal error: {type(exc).__name__}")
        raise
    finally:
        restore()
    code = int(exit_code_for_status(outcome.status.value))
    extra: dict[str, Any] = {"steps": outcome.steps, "verified": outcome.verified,
                             "gates": [g.to_json() for g in outcome.gates]}
    if not out.json_mode:
        _explain_gates(outcome)
    if outcome.pause:
        extra["pause"] = outcome.pause.to_json()
        if not out.json_mode:
            _explain_pause(outcome)
    out.run_id = outcome.run_id
    out.finish(outcome.status.value, code, outcome.reason, **extra)
    return code


def _explain_gates(outcome: RunOutcome) -> None:
    """The gates report, one line per gate, and which inputs the agent changed."""
    for gate in outcome.gates:
        g = gate.to_json()
        verdict = "passed" if g["passed"] else "failed"
        untouched = {True: "inputs untouched", False: "inputs MODIFIED",
                     None: "inputs not checked"}[g["inputs_untouched"]]
        took = f"{g['duration_seconds']:.2f}s" if g["duration_seconds"] is not None else "-"
        say(f"io: gate {verdict}: {g['command']} (exit {g['exit_status']}, {took},"
            f" sandbox {g['sandbox'] or '-'}, {untouched})")
        if g["modified_inputs"]:
            say("io: gate inputs were modified by the agent: " + ", ".join(g["modified_inputs"]))


def _explain_pause(outcome: RunOutcome) -> None:
    pause = outcome.pause
    if pause is None:
        return
    if pause.kind == "question":
        say(f"io: the agent asks: {pause.question}")
        say(f"    answer with: io resume {outcome.run_id} --answer \"…\"")
    else:
        say(f"io: approval needed: {pause.target} ({pause.reason})")
        say(f"    continue with: io resume {outcome.run_id} --approve   (or --deny)")


def exit_with(code: int) -> None:
    raise typer.Exit(code)

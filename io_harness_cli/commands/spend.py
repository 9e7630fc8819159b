"""`io spend`: tokens and derived cost, grouped by model, run, session, day or runner (the host).

Costs are derived here, at query time, from the loaded `[prices]` table and never
stored. A call the table cannot price is counted, not costed at zero, and a group (or
the total) holding one is shown as a floor. Cache reads and writes are shown beside
the prompt they are part of (priced at the cache rates of `[prices]`), and calls whose
provider reported no counts are counted as estimated. The table goes to stdout (it is the
answer): rich with a small bar per row on a terminal, tab-separated text otherwise
(`NO_COLOR`, a pipe). rich is imported on the terminal path only.
"""

from __future__ import annotations

import sys
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from io_harness_cli.commands._options import AllOpt, ConfigOpt, JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from harness_core import SpendBy, SpendGroup, SpendReport

BY_CHOICES = ("model", "run", "session", "day", "tree", "runner")
_BAR_WIDTH = 10
_BLOCKS = " ▏▎▍▌▋▊▉█"


def spend(
    by: Annotated[str, typer.Option(
        "--by", help="Group by model (the model that served), run, session, day (UTC),"
        " tree (each tree of runs rolled up into its root) or runner (the host).",
        metavar="model|run|session|day|tree|runner")] = "model",
    since: Annotated[str | None, typer.Option(
        "--since", help="From this date or ISO timestamp (inclusive; UTC unless it says).",
    )] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="Up to this ISO timestamp (exclusive), or through this whole date.",
    )] = None,
    tree: Annotated[bool, typer.Option(
        "--tree", help="With --by run: roll every tree of runs up into its root's row.")]
    = False,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    all_workspaces: AllOpt = False,
) -> None:
    """Tokens and derived cost by model, run, session or day or runner; unpriced calls are counted.

    The workspace's runs (-w, default: .), as `io runs` lists them; --all counts every
    workspace's.
    """
    from io_harness_cli.commands._load import (
        STORE_AND_PRICES,
        load_config,
        open_store,
        workspace_path,
    )
    from io_harness_cli.output import say, use_color, write_json

    group = _by(by)
    if tree:
        from harness_core import UsageError

        if group not in ("run", "tree"):
            raise UsageError("--tree rolls runs up into their tree's root: use it with --by run")
        group = "tree"
    lower = _bound(since, "--since", end_of_day=False)
    upper = _bound(until, "--until", end_of_day=True)
    ws = workspace_path(workspace)
    cfg = load_config(ws, config, STORE_AND_PRICES)
    store = open_store(cfg)
    try:
        # Summed in the database: one row per group and model, never one per call.
        sums = store.spend_sums(group, since=lower, until=upper,
                                workspace=None if all_workspaces else str(ws))
    finally:
        store.close()
    from harness_core import summarize_sums

    report = summarize_sums(sums, cfg.prices, by=group)
    if json_out:
        write_json({**report.to_json(), "since": lower, "until": upper})
        return
    if use_color(sys.stdout):
        _rich_table(report)
    else:
        _plain_table(report)
    for note in _notes(report, has_prices=cfg.prices is not None):
        say(f"io: {note}")


# --- arguments -------------------------------------------------------------------------


def _by(value: str) -> SpendBy:
    from harness_core import UsageError

    if value == "model":
        return "model"
    if value == "run":
        return "run"
    if value == "session":
        return "session"
    if value == "day":
        return "day"
    if value == "tree":
        return "tree"
    if value == "runner":
        return "runner"
    raise UsageError(f"--by {value!r} is not one of: {', '.join(BY_CHOICES)}",
                     hint="io spend --by model|run|session|day|tree|runner")


def _bound(text: str | None, option: str, *, end_of_day: bool) -> str | None:
    """An ISO UTC bound in the store's own format, so that strings compare as times.

    A bare date is midnight UTC; for `--until` it is the next midnight, so the whole
    day is included. A timestamp without an offset is taken as UTC.
    """
    from harness_core import UsageError

    if text is None:
        return None
    value = text.strip()
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            if end_of_day:
                day += timedelta(days=1)
            when = datetime.combine(day, time(0), tzinfo=UTC)
        else:
            when = datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError as exc:
        raise UsageError(f"{option} {text!r} is not a date or an ISO timestamp",
                         hint=f"{option} 2026-01-31 or {option} 2026-01-31T12:00:00Z") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="microseconds")


# --- rendering -------------------------------------------------------------------------


_HEADERS = ["{by}", "calls", "prompt", "output", "total", "cost_usd", "unpriced",
            "cache_read", "cache_write", "estimated"]


def _cells(group: SpendGroup, label: str) -> list[str]:
    return [label, str(group.calls), _num(group.prompt_tokens),
            _num(group.completion_tokens), _num(group.total_tokens), _cost(group),
            str(group.unpriced_calls), _num(group.cache_read_tokens),
            _num(group.cache_write_tokens), str(group.estimated_calls)]


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def _cost(group: SpendGroup) -> str:
    if group.cost_usd is None:
        return "-"
    figure = f"{group.cost_usd:.6f}"
    return f">={figure}" if group.is_floor else figure


def _label(group: SpendGroup, by: str) -> str:
    if group.key is not None:
        return group.key
    return "(no session)" if by == "session" else "-"


def _plain_table(report: SpendReport) -> None:
    out = sys.stdout.write
    out("\t".join([report.by, *_HEADERS[1:]]) + "\n")
    for group in report.groups:
        out("\t".join(_cells(group, _label(group, report.by))) + "\n")
    out("\t".join(_cells(report.total, "total")) + "\n")
    sys.stdout.flush()


def _weight(group: SpendGroup, by_cost: bool) -> float:
    if by_cost:
        return group.cost_usd or 0.0
    if group.total_tokens is not None:
        return float(group.total_tokens)
    return float((group.prompt_tokens or 0) + (group.completion_tokens or 0))


def bar(fraction: float, width: int = _BAR_WIDTH) -> str:
    """A bar `width` cells wide filled to `fraction` (0..1), in eighths of a cell."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_BLOCKS[part] if part else "")
    return text.ljust(width)


def _rich_table(report: SpendReport) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    by_cost = report.total.cost_usd is not None
    weights = [_weight(g, by_cost) for g in report.groups]
    top = max(weights, default=0.0) or 1.0
    title = f"spend by {report.by}"
    if report.as_of is not None:
        title += f", prices as of {report.as_of.isoformat()}"
    # Text cells, never markup: a model name may contain "[".
    table = Table(title=Text(title), show_footer=True, box=box.SIMPLE_HEAD)
    rows = [_cells(g, _label(g, report.by)) for g in report.groups]
    total = _cells(report.total, "total")
    headers = [report.by, *_HEADERS[1:]]
    for i, (header, footer) in enumerate(zip(headers, total, strict=True)):
        # Only the key column may shrink (with an ellipsis); figures are never cut.
        width = max(len(header), len(footer), *(len(r[i]) for r in rows))
        table.add_column(Text(header), footer=Text(footer), no_wrap=True,
                         justify="left" if i == 0 else "right",
                         min_width=min(width, 8) if i == 0 else width)
    table.add_column(Text("cost" if by_cost else "tokens"), footer=Text(""), no_wrap=True,
                     min_width=_BAR_WIDTH)
    for cells, weight in zip(rows, weights, strict=True):
        table.add_row(*(Text(c) for c in cells), Text(bar(weight / top), style="cyan"))
    Console(file=sys.stdout).print(table)


def _notes(report: SpendReport, *, has_prices: bool) -> list[str]:
    notes: list[str] = []
    if not has_prices:
        notes.append("no [prices] table: tokens only, no cost derived")
    elif report.is_floor:
        unpriced = report.total.unpriced_calls
        notes.append(
            f"{unpriced} call{'s' if unpriced != 1 else ''} could not be priced (no price for"
            " the model that served, or no token counts): the cost is a floor, not a total")
    estimated = report.total.estimated_calls
    if estimated:
        notes.append(
            f"{estimated} call{'s' if estimated != 1 else ''} reported no token counts: their"
            " tokens (and cost) are io's estimate, about 4 characters a token")
    return notes

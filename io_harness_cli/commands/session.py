"""`io session new|turn|branch|list|show`: conversations whose turns are runs.

A turn is driven exactly like `io run` (same trace, same JSON lines, same exit codes)
and is resumable by its run id with `io resume`. `show` draws the append-only tree: a
rich tree on a terminal, indented plain text otherwise, or JSON with `--json`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from io_harness_cli.commands._options import AllOpt, ConfigOpt, JsonOpt, WorkspaceOpt, id_arg

if TYPE_CHECKING:
    from harness_core import Config, SessionTree, Store, TurnRecord

app = typer.Typer(help="Conversations whose turns are runs, in an append-only tree.",
                  no_args_is_help=True, add_completion=False)

SessionArg = Annotated[str, typer.Argument(help="The session (a unique prefix works).",
                                           callback=id_arg)]
MessageArg = Annotated[str, typer.Argument(help="The message for the agent; `-` reads stdin.")]


def _open(workspace: Path | None, config: Path | None,
          tables: tuple[str, ...] | None = None) -> tuple[Config, Store]:
    from io_harness_cli.commands._load import load_config, open_store, workspace_path

    cfg = load_config(workspace_path(workspace), config, tables)
    return cfg, open_store(cfg)


@app.command("new")
def new(
    title: Annotated[str, typer.Option("--title", help="A label for the session.")] = "",
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Start a session in the workspace; prints its id on stdout."""
    from harness_core import Session
    from io_harness_cli.commands._load import STORE_ONLY, workspace_path
    from io_harness_cli.output import say, write_json

    ws = workspace_path(workspace)
    _, store = _open(ws, config, STORE_ONLY)
    try:
        session = Session.new(store, workspace=ws, title=title)
    finally:
        store.close()
    if json_out:
        write_json(session.record.to_json())
        return
    sys.stdout.write(session.id + "\n")
    say(f"io: session {session.id} created; take a turn with:"
        f" io session turn {session.id} \"…\"")


@app.command("turn")
def turn(
    session_id: SessionArg,
    message: MessageArg,
    from_turn: Annotated[str | None, typer.Option(
        "--from", help="Branch from this turn (its number or run id) instead of the latest.",
        callback=id_arg)] = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Take a turn: MESSAGE continues the latest turn (or branches with --from)."""
    _take_turn(session_id, message, from_turn, workspace, config, json_out)


@app.command("branch")
def branch(
    session_id: SessionArg,
    message: MessageArg,
    from_turn: Annotated[str, typer.Option(
        "--from", help="The earlier turn to branch from (its number or run id).",
        callback=id_arg)],
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Take a turn from an earlier turn; the branch it leaves stays as it was."""
    _take_turn(session_id, message, from_turn, workspace, config, json_out)


def _take_turn(session_id: str, message: str, from_turn: str | None, workspace: Path | None,
               config: Path | None, json_out: bool) -> None:
    from io_harness_cli.commands._oversee import EventOutput, exit_with, oversee

    out = EventOutput(json_out)

    def body() -> Any:
        from harness_core import Session, UsageError
        from io_harness_cli.commands._load import (
            load_config,
            read_stdin_text,
            recorded_workspace,
            workspace_path,
        )
        from io_harness_cli.commands._oversee import assemble

        text = read_stdin_text("the message") if message == "-" else message
        if not text.strip():
            raise UsageError("the message is empty", hint="give the agent something to do")
        ws_hint = workspace_path(workspace) if workspace is not None else None
        cfg, store = _open(ws_hint or Path("."), config)
        try:
            session = Session.open(store, session_id)
            ws = recorded_workspace(session.record.workspace, ws_hint,
                                    f"session {session.record.session_id}")
            if ws_hint is None:
                cfg = load_config(ws, config)
            with assemble(cfg, ws, text, store, interactive=not json_out, out=out) as run:
                return session.turn(run.runner, run.spec, from_turn=from_turn)
        finally:
            store.close()

    exit_with(oversee(out, body))


@app.command("list")
def list_(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many sessions.", min=1,
                                       max=100_000)] = 50,
    all_workspaces: AllOpt = False,
    status: Annotated[list[str] | None, typer.Option(
        "--status", help="Only sessions whose newest turn has this status (repeatable).",
        metavar="STATUS")] = None,
) -> None:
    """List the workspace's sessions (or every workspace's), newest first."""
    from io_harness_cli.commands._load import STORE_ONLY, workspace_path
    from io_harness_cli.commands._options import statuses
    from io_harness_cli.output import say, write_json

    wanted = statuses(status)
    ws = workspace_path(workspace)
    _, store = _open(ws, config, STORE_ONLY)
    try:
        records = store.list_sessions(limit, workspace=None if all_workspaces else str(ws),
                                      statuses=wanted)
    finally:
        store.close()
    if json_out:
        for record in records:
            write_json(record.to_json())
        return
    from io_harness_cli.render import print_table

    where = "every workspace" if all_workspaces else str(ws)
    print_table(["session", "created", "turns", "status", "latest run", "title"], [
        [r.session_id, r.created_at[:19].replace("T", " "), str(r.turns), r.status or "-",
         r.latest_run_id or "-", _short(r.title)] for r in records
    ], title=f"sessions in {where}")
    if not records:
        say(f"io: no sessions in {where}" + ("" if all_workspaces else "; --all lists every"
                                             " workspace's"))


@app.command("show")
def show(
    session_id: SessionArg,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show the session's turns as a tree (branches indented under their turn)."""
    from harness_core import Session
    from io_harness_cli.commands._load import STORE_ONLY
    from io_harness_cli.output import use_color, write_json

    _, store = _open(workspace, config, STORE_ONLY)
    try:
        tree = Session.open(store, session_id).tree()
    finally:
        store.close()
    if json_out:
        write_json(tree.to_json())
    elif use_color(sys.stdout):
        _rich_tree(tree)
    else:
        _plain_tree(tree)


def _short(text: str, width: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


_MARKS = {"finished": "✓", "failed": "✗", "errored": "✗", "stopped": "■", "paused": "⏸",
          "interrupted": "⏹", "running": "…"}


def _label(tree: SessionTree, turn: TurnRecord, opens: bool) -> str:
    parent = tree.parent(turn)
    parts = [f"#{turn.number}", f"{_MARKS.get(turn.status.value, '?')} {turn.status.value}",
             f"run {turn.run_id}", _short(turn.message)]
    if opens and parent is not None:
        parts.append(f"(branch from #{parent.number})")
    if tree.latest is not None and turn.run_id == tree.latest.run_id:
        parts.append("← latest")
    return "  ".join(parts)


def _heading(tree: SessionTree) -> str:
    s = tree.session
    title = f"  “{s.title}”" if s.title else ""
    return f"session {s.session_id}{title}  {len(tree.turns)} turns  workspace {s.workspace}"


def _plain_tree(tree: SessionTree) -> None:
    lines = [_heading(tree)]
    for depth, turn, opens in tree.walk():
        lead = "  " * depth + ("└─ " if opens else "   ")
        lines.append(lead + _label(tree, turn, opens))
    if not tree.turns:
        lines.append("   (no turns yet)")
    sys.stdout.write("\n".join(lines) + "\n")


def _rich_tree(tree: SessionTree) -> None:
    from rich.console import Console
    from rich.text import Text
    from rich.tree import Tree

    root = Tree(Text(_heading(tree), style="bold"))
    styles = {"finished": "green", "failed": "red", "errored": "red", "stopped": "yellow",
              "paused": "cyan", "interrupted": "magenta"}
    # containers[d]: where turns at depth d go; last[d]: the newest turn drawn at depth d.
    # A branch (depth d + 1) hangs under the turn it was taken from, last[d].
    containers: dict[int, Tree] = {0: root}
    last: dict[int, Tree] = {}
    for depth, turn, opens in tree.walk():
        if opens and depth > 0:
            containers[depth] = last[depth - 1]
        label = Text(_label(tree, turn, opens), style=styles.get(turn.status.value, ""))
        last[depth] = containers[depth].add(label)
    if not tree.turns:
        root.add(Text("(no turns yet)", style="dim"))
    Console(file=sys.stdout).print(root)

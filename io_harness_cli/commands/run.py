"""`io run [GOAL]`: run the contract's goal (or GOAL, or `-` for stdin) in a workspace.

`io run --template NAME KEY=VALUE ... -- ARGS` renders template NAME into the goal.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from io_harness_cli.commands._common import ConfigOpt, JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from harness_core import Config


def run(
    goal: Annotated[list[str] | None, typer.Argument(
        help="The goal; `-` reads it from stdin. With --template: KEY=VALUE values, then"
        " `--` and the text for $ARGUMENTS.", show_default=False)] = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    scratch: Annotated[bool, typer.Option(
        "--scratch", help="Run on a temporary copy of the workspace; print the diff.")] = False,
    run_id: Annotated[str | None, typer.Option(
        "--run-id", hidden=True, help="The new run's id (set by `io batch`).")] = None,
    narrow: Annotated[str | None, typer.Option(
        "--narrow", hidden=True,
        help="JSON overrides that only narrow [policy] and [budget] (set by `io batch`).")] = None,
    template: Annotated[str | None, typer.Option(
        "--template", "-t", help="Render template NAME (`io templates list`) into the goal.",
        metavar="NAME")] = None,
) -> None:
    """Run an agent on GOAL (or the contract's goal) inside the configured boundary."""
    from io_harness_cli.commands._drive import EventOutput, drive

    out = EventOutput(json_out)
    copy: list[Path] = []

    def body() -> object:
        from harness_core import UsageError
        from io_harness_cli.commands._common import (
            assemble,
            load_config,
            open_store,
            workspace_path,
        )
        from io_harness_cli.commands._scratch import make_scratch

        ws = workspace_path(workspace)
        if scratch:
            copy.append(make_scratch(ws))
            ws = copy[0]
        cfg = load_config(ws, _scratch_config(config, workspace, ws) if scratch else config)
        text = _goal(goal or [], cfg.contract.goal, template, cfg.template_dirs)
        if not text.strip():
            raise UsageError("no goal: give GOAL, `-` for stdin, or [contract] goal in io.toml")
        if narrow is not None:
            cfg = _narrowed(cfg, narrow)
        store = open_store(cfg)
        try:
            with assemble(cfg, ws, text, store, interactive=not json_out, out=out,
                          new_id=None if run_id is None else (lambda: run_id)) as run:
                return run.runner.start(run.spec)
        finally:
            store.close()

    from io_harness_cli.commands._drive import exit_with

    code = drive(out, body)  # type: ignore[arg-type]
    if copy:
        from io_harness_cli.commands._common import workspace_path
        from io_harness_cli.commands._scratch import report_scratch

        report_scratch(workspace_path(workspace), copy[0])
    exit_with(code)


def _narrowed(cfg: Config, narrow: str) -> Config:
    """`cfg` with a batch task's overrides applied; they can only narrow."""
    import json
    from dataclasses import replace

    from harness_core import UsageError, narrow_run

    try:
        overrides = json.loads(narrow)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--narrow is not JSON: {exc.msg}") from exc
    policy, budget = narrow_run(cfg.policy, cfg.budget, overrides)
    return replace(cfg, policy=policy, budget=budget)


def _goal(tokens: list[str], default: str, template: str | None, dirs: tuple[Path, ...]) -> str:
    from harness_core import Templates, UsageError

    if template is not None:
        values, arguments = _template_values(tokens, sys.argv)
        return Templates(dirs).render(template, values, " ".join(arguments))
    if len(tokens) > 1:
        raise UsageError(f"io run takes one GOAL, got {len(tokens)} words",
                         hint='quote the goal: io run "fix the failing test"')
    if tokens == ["-"]:
        from io_harness_cli.commands._common import read_stdin_text

        return read_stdin_text("the goal")
    return tokens[0] if tokens else default


def _template_values(tokens: list[str], argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """KEY=VALUE pairs, then (after `--`) the words for $ARGUMENTS."""
    from harness_core import UsageError

    after = len(argv) - argv.index("--") - 1 if "--" in argv else 0
    pairs, arguments = tokens[:len(tokens) - after], tokens[len(tokens) - after:]
    values: dict[str, str] = {}
    for token in pairs:
        key, sep, value = token.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"expected KEY=VALUE before `--`, got {token!r}",
                             hint="io run --template NAME KEY=VALUE ... -- ARGUMENTS")
        if key in values:
            raise UsageError(f"{key}= is given twice")
        values[key] = value
    return values, arguments


def _scratch_config(config: Path | None, workspace: Path | None, copy: Path) -> Path | None:
    """A --config inside the original workspace points at its twin in the copy."""
    if config is None:
        return None
    original = (workspace or Path(".")).resolve()
    resolved = config.resolve()
    try:
        return copy / resolved.relative_to(original)
    except ValueError:
        return config

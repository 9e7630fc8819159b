"""`io run [GOAL]`: run the contract's goal (or GOAL, or `-` for stdin) in a workspace.

`io run --template NAME KEY=VALUE ... -- ARGS` renders template NAME into the goal.

Annotations here are evaluated when the module is imported (no `from __future__ import
annotations`): Typer reads every parameter's `Annotated[...]` twice when it builds the
command (`inspect.signature(eval_str=True)` and `get_type_hints`), and string annotations
cost a `compile` each time, about half of building `io run`'s command.
"""

import sys
from pathlib import Path
from typing import Annotated

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt


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
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="Use MODEL for this run instead of [provider] model.",
        metavar="MODEL")] = None,
    max_steps: Annotated[int | None, typer.Option(
        "--max-steps", help="Allow N steps for this run instead of [budget] max_steps.",
        min=1, max=1_000_000, metavar="N")] = None,
    output_last_message: Annotated[Path | None, typer.Option(
        "--output-last-message", help="Also write the final answer to FILE.",
        metavar="FILE", dir_okay=False)] = None,
    output_schema: Annotated[Path | None, typer.Option(
        "--output-schema", help="The final answer must be JSON valid under the JSON Schema"
        " in FILE (the model is told; exit 1 when it is not, after retries).",
        metavar="FILE", dir_okay=False)] = None,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Write the gate rounds to FILE as JUnit XML.", metavar="FILE",
        dir_okay=False)] = None,
) -> None:
    """Run an agent on GOAL (or the contract's goal) inside the configured boundary.

    The final answer goes to stdout (with --json: JSON lines, the answer in
    `run_finished`); the trace goes to stderr.
    """
    from io_harness_cli.commands._oversee import EventOutput, Reports, exit_with, oversee

    out = EventOutput(json_out)
    copy: list[Path] = []
    reports = Reports(last_message=output_last_message, junit=junit)

    def body() -> object:
        from dataclasses import replace

        from harness_core import UsageError
        from io_harness_cli.commands._load import load_config, open_store, workspace_path
        from io_harness_cli.commands._overrides import apply_overrides, run_overrides
        from io_harness_cli.commands._oversee import assemble
        from io_harness_cli.commands._scratch import SCRATCH_OF, make_scratch

        reports.check()
        schema = _schema(output_schema) if output_schema is not None else None
        ws = original = workspace_path(workspace)
        reports.workspace = original  # its links are never followed by a report write
        if scratch:
            copy.append(make_scratch(ws))
            ws = copy[0]
        config_file = _scratch_config(config, workspace, ws) if scratch else config
        cfg = load_config(ws, config_file)
        text = _goal(goal or [], cfg.contract.goal, template, cfg.template_dirs)
        if not text.strip():
            raise UsageError("no goal: give GOAL, `-` for stdin, or [contract] goal in io.toml",
                             hint='io run "fix the failing test"')
        overrides = run_overrides(model, max_steps, narrow, config_file)
        cfg = apply_overrides(cfg, overrides)
        if scratch:  # recorded: a resume acts in the copy, never in `original`
            overrides[SCRATCH_OF] = str(original)
        if schema is not None:
            from harness_core import schema_instructions

            text = f"{text}\n\n{schema_instructions(schema)}"
        store = open_store(cfg)
        try:
            with assemble(cfg, ws, text, store, interactive=not json_out, out=out,
                          new_id=None if run_id is None else (lambda: run_id)) as run:
                return run.runner.start(replace(run.spec, answer_schema=schema,
                                                run_overrides=overrides or None))
        finally:
            store.close()

    code = oversee(out, body, reports)  # type: ignore[arg-type]
    if copy:
        from io_harness_cli.commands._load import workspace_path
        from io_harness_cli.commands._scratch import end_scratch

        end_scratch(workspace_path(workspace), copy[0], out.status, out.run_id)
    exit_with(code)


def _schema(path: Path) -> dict[str, object]:
    """The JSON Schema in `path`, checked."""
    import json

    from harness_core import UsageError, check_answer_schema

    try:
        schema = json.loads(path.expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"--output-schema {str(path)!r}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"--output-schema {str(path)!r} is not JSON: {exc}") from None
    return dict(check_answer_schema(schema))


def _goal(tokens: list[str], default: str, template: str | None, dirs: tuple[Path, ...]) -> str:
    from harness_core import Templates, UsageError

    if template is not None:
        values, arguments = _template_values(tokens, sys.argv)
        return Templates(dirs).render(template, values, " ".join(arguments))
    if len(tokens) > 1:
        raise UsageError(f"io run takes one GOAL, got {len(tokens)} words",
                         hint='quote the goal: io run "fix the failing test"')
    if tokens == ["-"]:
        from io_harness_cli.commands._load import read_stdin_text

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

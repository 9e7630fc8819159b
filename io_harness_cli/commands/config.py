"""`io config show|check|schema|init`: the merged io.toml, its validation, its JSON
Schema, and a commented starter file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from harness_core import Config, RunSpec

app = typer.Typer(help="Show, check or start io.toml; print its JSON Schema.",
                  no_args_is_help=True,
                  add_completion=False)


@app.command("show")
def show(workspace: WorkspaceOpt = None, config: ConfigOpt = None, json_out: JsonOpt = False,
         toml: Annotated[bool, typer.Option(
             "--toml", help="Write the merged config as TOML (secrets as ***).")] = False,
         ) -> None:
    """Print the merged configuration, each value with the scope it came from and the
    system scope's requirement that holds it (the "held" column)."""
    from harness_core import UsageError
    from io_harness_cli.commands._load import load_config, workspace_path
    from io_harness_cli.output import write_json

    if toml and json_out:
        raise UsageError("--toml and --json exclude each other")
    cfg = load_config(workspace_path(workspace), config)
    if toml:
        import sys

        sys.stdout.write(cfg.to_toml())
        return
    rows = cfg.show()
    trust = _trust_store(cfg)
    if json_out:
        write_json({
            "files": [{"scope": f.scope.value, "path": str(f.path)} for f in cfg.files],
            "values": [r.to_json() for r in rows],
            "tls": {"trust_store": trust.kind, "source": trust.source,
                    "ca_bundles": [str(p) for p in trust.ca_bundles]},
        })
        return
    from io_harness_cli.render import print_table

    print_table(["key", "value", "scope", "file", "held"],
                [[r.key, _text(r.value), r.scope.value, str(r.file), r.held or ""]
                 for r in rows],
                title="io config", stdout=True)
    print(f"TLS trust store (HTTP providers): {trust.describe()}")


def _trust_store(cfg: Any) -> Any:
    from harness_core import trust_store

    chain = (cfg.provider, *cfg.provider.fallback) if cfg.provider is not None else ()
    return trust_store([p.ca_bundle for p in chain if p.ca_bundle is not None])


def _text(value: object) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)


@app.command("check")
def check(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    for_run: Annotated[bool, typer.Option(
        "--for-run", help="Also require what `io run` needs: a [provider] and its key set "
                          "(otherwise a warning).")] = False,
) -> None:
    """Validate the configuration as `io run` does; exit 2 on the first problem."""
    from harness_core import check_runnable
    from io_harness_cli.commands._load import environment, load_config, workspace_path
    from io_harness_cli.output import say

    ws = workspace_path(workspace)
    cfg = load_config(ws, config, pydantic=True)  # the declaration itself, not its twin
    warnings: list[str] = []
    # The same preparation `io run` makes; without --for-run a missing [provider] or an
    # unset key is a warning, and the rest is still checked.
    spec = check_runnable(cfg, ws, env=environment(), for_run=for_run, warn=warnings.append)
    _check_hooks(cfg, ws)
    for warning in warnings:
        say(f"io: warning: {warning}")
    _print_gate_inputs(spec)
    files = ", ".join(f"{f.scope.value}: {f.path}" for f in cfg.files) or "no io.toml found"
    done = "ready to run" if for_run else "config ok"
    say(f"io: {done} ({files})" + (f"; {len(warnings)} warning(s)" if warnings else ""))


def _check_hooks(cfg: Config, ws: Path) -> None:
    """Refuse (exit 2, naming it) a hook whose program or script is missing, or a host
    hook that names something in the workspace: at run time it would refuse every call."""
    from harness_core import check_hook_command
    from io_harness_cli.commands._load import environment

    env = environment()
    for hook in cfg.hooks:
        check_hook_command(hook, ws, env)


def _print_gate_inputs(spec: RunSpec) -> None:
    """Each verification gate and the inputs `io run` will protect (or watch, if editable)."""
    import sys

    from harness_core import gate_inputs
    for number, gate in enumerate(gate_inputs(spec), 1):
        how = "inferred" if gate.inferred else "from io.toml"
        mode = "editable by the agent" if gate.editable else "write-protected for the run"
        sys.stdout.write(f"gate {number}: {gate.criterion}\n")
        sys.stdout.write(f"  inputs ({how}, {mode}): "
                         f"{', '.join(gate.patterns) if gate.patterns else '(none)'}\n")


@app.command("schema")
def schema() -> None:
    """Print the JSON Schema of io.toml (for Taplo / Even Better TOML completion)."""
    import json
    import sys

    from harness_core import config_json_schema

    sys.stdout.write(json.dumps(config_json_schema(), indent=2) + "\n")


@app.command("init")
def init(
    workspace: WorkspaceOpt = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Where to write (default: <workspace>/io.toml).",
        dir_okay=False)] = None,
    provider: Annotated[str, typer.Option(
        "--provider", help="The [provider]: anthropic, openai, openrouter or scripted "
                           "(offline: replays replay.jsonl, written beside it).")]
    = "anthropic",
) -> None:
    """Write a commented starter io.toml for the detected toolchain (never overwrites)."""
    from harness_core import STARTER_PROVIDERS, STARTER_SCRIPT, UsageError, starter_config
    from io_harness_cli.commands._load import workspace_path
    from io_harness_cli.output import say

    if provider not in STARTER_PROVIDERS:
        raise UsageError(f"--provider {provider!r} is not a provider kind io config init"
                         " writes", hint="use one of: " + ", ".join(STARTER_PROVIDERS))
    ws = workspace_path(workspace)
    target = output if output is not None else ws / "io.toml"
    _write_new(target, starter_config(ws, provider), ws)
    wrote = [str(target)]
    script = target.parent / "replay.jsonl"
    if provider == "scripted" and not script.exists():
        _write_new(script, STARTER_SCRIPT, ws)
        wrote.append(str(script))
    say(f"io: wrote {' and '.join(wrote)}; check it with: io config check"
        + (f" -c {target}" if output is not None else ""))


def _write_new(target: Path, text: str, workspace: Path) -> None:
    """Write `text` to a file that must not exist yet (an existing file, or a link planted
    there, is never replaced), never through a link inside the workspace."""
    from harness_core import HostBoundaryError, UsageError, write_operator_file

    try:
        write_operator_file(target, text.encode("utf-8"), workspace=workspace, exclusive=True)
    except HostBoundaryError as exc:
        if exc.exists:
            raise UsageError(f"{target} already exists; io config init never overwrites",
                             hint="move it away, or pass --output FILE") from None
        raise

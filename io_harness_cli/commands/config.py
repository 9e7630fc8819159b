"""`io config show|check|schema|init`: the merged io.toml, its validation, its JSON
Schema, and a commented starter file."""

from __future__ import annotations

import typer

from io_harness_cli.commands._common import ConfigOpt, JsonOpt, WorkspaceOpt

app = typer.Typer(help="Show, check or start io.toml; print its JSON Schema.",
                  no_args_is_help=True,
                  add_completion=False)


@app.command("show")
def show(workspace: WorkspaceOpt = None, config: ConfigOpt = None, json_out: JsonOpt = False
         ) -> None:
    """Print the merged configuration, each value with the scope it came from."""
    from io_harness_cli.commands._common import load_config, workspace_path
    from io_harness_cli.output import write_json

    cfg = load_config(workspace_path(workspace), config)
    rows = cfg.show()
    if json_out:
        write_json({
            "files": [{"scope": f.scope.value, "path": str(f.path)} for f in cfg.files],
            "values": [{"key": r.key, "value": r.value, "scope": r.scope.value,
                        "file": str(r.file)} for r in rows],
        })
        return
    from io_harness_cli.render import print_table

    print_table(["key", "value", "scope", "file"],
                [[r.key, _text(r.value), r.scope.value, str(r.file)] for r in rows],
                title="io config", stdout=True)


def _text(value: object) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)


@app.command("check")
def check(workspace: WorkspaceOpt = None, config: ConfigOpt = None) -> None:
    """Validate the configuration exactly as `io run` does; exit 2 on the first problem."""
    from harness_core import check_runnable
    from io_harness_cli.commands._common import environment, load_config, workspace_path
    from io_harness_cli.output import say

    ws = workspace_path(workspace)
    cfg = load_config(ws, config)
    check_runnable(cfg, ws, env=environment())  # the same preparation `io run` makes
    files = ", ".join(f"{f.scope.value}: {f.path}" for f in cfg.files) or "no io.toml found"
    say(f"io: config ok ({files})")


@app.command("schema")
def schema() -> None:
    """Print the JSON Schema of io.toml (for Taplo / Even Better TOML completion)."""
    import json
    import sys

    from harness_core import config_json_schema

    sys.stdout.write(json.dumps(config_json_schema(), indent=2) + "\n")

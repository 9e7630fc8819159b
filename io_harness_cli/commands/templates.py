"""`io templates list`: the prompt templates `io run --template NAME` can render."""

from __future__ import annotations

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt

app = typer.Typer(help="Prompt templates (NAME.md) for `io run --template NAME`.",
                  no_args_is_help=True)


@app.command("list")
def list_templates(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List the templates of the workspace's and the user's template directories."""
    from harness_core import Templates
    from io_harness_cli.commands._load import load_config, workspace_path
    from io_harness_cli.output import say, write_json

    cfg = load_config(workspace_path(workspace), config)
    found = Templates(cfg.template_dirs).available()
    if json_out:
        for t in found:
            write_json({"name": t.name, "path": str(t.path), "description": t.description,
                        "shadowed": t.shadowed})
        return
    if not found:
        say("io: no templates in " + ", ".join(str(d) for d in cfg.template_dirs))
        return
    width = max(len(t.name) for t in found)
    for t in found:
        note = "  (shadowed)" if t.shadowed else ""
        typer.echo(f"{t.name.ljust(width)}  {t.description or '-'}  {t.path}{note}")

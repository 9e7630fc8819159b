"""`io session`: conversations whose turns are runs."""

from __future__ import annotations

import typer

app = typer.Typer(help="Conversations whose turns are runs, in an append-only tree.",
                  no_args_is_help=True, add_completion=False)

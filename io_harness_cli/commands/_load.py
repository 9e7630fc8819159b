"""Reading what a command works on: the environment, the workspace, io.toml, the store,
and text on stdin. Uses only names `harness_core` exports, imported inside functions."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness_core import Config, Store

__all__ = ["STORE_AND_PRICES", "STORE_ONLY", "environment", "load_config", "open_store",
           "read_stdin_text", "recorded_workspace", "workspace_path"]

STORE_ONLY = ("store",)
"""The tables a command that only reads or writes the store resolves."""
STORE_AND_PRICES = ("store", "prices")
"""The tables a command that reports recorded costs resolves."""


def environment() -> dict[str, str]:
    """The process environment, read once here and passed down as a mapping."""
    return dict(os.environ)


def workspace_path(workspace: Path | None) -> Path:
    """The workspace directory, which must exist."""
    from harness_core import UsageError

    path = (workspace or Path(".")).expanduser()
    if not path.is_dir():
        raise UsageError(f"workspace {str(path)!r} is not a directory",
                         hint="pass an existing directory with --workspace/-w")
    return path.resolve()


def recorded_workspace(recorded: str, given: Path | None, what: str) -> Path:
    """The workspace a recorded run or session acts in: the one it was recorded in.

    `given` (`-w`) may name that same directory, or a new place for it when the recorded
    one no longer exists (the workspace moved); naming another existing workspace would
    run the record's acts there (a resume approving another project's act), so it is
    refused.

    Raises:
        UsageError: `given` is another workspace than the recorded one, which still
            exists; or no `given` and the recorded one is gone.
    """
    from harness_core import UsageError

    if given is None:
        return workspace_path(Path(recorded))
    ws = workspace_path(given)
    if str(ws) == recorded or not Path(recorded).is_dir():
        return ws
    raise UsageError(f"{what} belongs to workspace {recorded!r}, not {str(ws)!r}",
                     hint=f"drop -w (io uses the recorded workspace) or give -w {recorded}")


def load_config(workspace: Path, config: Path | None,
                tables: tuple[str, ...] | None = None, *, pydantic: bool = False) -> Config:
    """Load io.toml once; `tables` limits what is resolved (see `load_config`); `pydantic`:
    validate with pydantic itself rather than the plain validator generated from it.

    From here on, everything `io` prints passes through the config's secret redactor.
    """
    from harness_core import load_config as load
    from harness_core import secret_redactor
    from io_harness_cli.output import redact_output

    env = environment()
    loaded = load(workspace, config_file=config, env=env, tables=tables,
                  validator="pydantic" if pydantic else "plain")
    redactor = secret_redactor(loaded, env)
    redact_output(redactor if redactor else None)
    return loaded


def open_store(config: Config) -> Store:
    """Open the store, then kill and record what dead `io` processes left running."""
    from harness_core import Store, sweep_leftovers
    from io_harness_cli.output import say

    store = Store(config.store_url or config.store_path)
    for swept in sweep_leftovers(store):
        ended = [k for k in swept.killed if k.get("ended") is not False]
        if ended:
            names = ", ".join(f"{k['pid']} ({k['name']})" for k in ended)
            say(f"io: swept what io process {swept.owner_pid} left running after it died:"
                f" {names}")
        if swept.not_ended:
            names = ", ".join(f"{k['pid']} ({k['name']}: {k.get('error', '?')})"
                              for k in swept.not_ended)
            say(f"io: could not end what io process {swept.owner_pid} left running: {names}")
        if swept.removed:
            say(f"io: removed the sandbox placeholders and unfinished writes io process"
                f" {swept.owner_pid} left after it died: {', '.join(swept.removed)}")
    return store


def read_stdin_text(what: str) -> str:
    """Standard input read whole and decoded as UTF-8.

    Raises:
        UsageError: It is not UTF-8 text.
    """
    from harness_core import UsageError

    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} read from stdin is not valid UTF-8 text (byte"
                         f" {exc.start})", hint="pass text encoded as UTF-8") from None

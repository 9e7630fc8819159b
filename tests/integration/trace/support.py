"""A recorded run with something of everything (a hostile answer, a plan, a refusal, a
failing command, a created and edited file, a gate), made by the real `io run`, and the
headless browser that opens the page made of it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_io
from tests.integration.cli.helpers import make_workspace, replay_line

HOSTILE = ('<script>window.__pwned = 1</script><img src="https://example.invalid/x.png"'
           ' onerror="window.__pwned = 2"> FAILED')
"""What a model may write: markup that must show as text and never run or fetch."""

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run"]

TOML = """[policy]
deny_write = ["secrets/**"]
allow_exec = ["echo*", "false*", "true*"]

[prices]
as_of = "2026-11-01"
[prices.models."priced-model"]
input_per_mtok = 3.0
output_per_mtok = 15.0
"""


def rich_run(root: Path) -> tuple[Path, str]:
    """Run the scripted replay through `io run`; returns the workspace and the run id."""
    ws = make_workspace(root, [
        replay_line(HOSTILE,
                    ("todo_write", {"todos": [{"content": "look <b>around</b>",
                                               "status": "in_progress"}]}),
                    ("exec", {"argv": ["echo", "hi"]})),
        replay_line("write", ("write_file", {"path": "a.txt", "content": "one\ntwo\n"}),
                    ("write_file", {"path": "secrets/x", "content": "nope"})),
        replay_line("edit", ("edit_file", {"path": "a.txt", "old": "two", "new": "three"}),
                    ("exec", {"argv": ["false"]}),
                    ("todo_write", {"todos": [{"content": "look <b>around</b>",
                                               "status": "done"}]})),
        replay_line("done"),
    ], toml_extra=TOML, verify="true")
    done = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    runs = run_io(["runs", "-w", str(ws), "--json"])
    import json

    return ws, str(json.loads(runs.stdout.splitlines()[0])["run_id"])


def require_browser() -> None:
    """Skip where no Chromium is installed; fail instead on CI (IO_REQUIRE_SANDBOX=1)."""
    missing = None
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        missing = f"no Chromium at {CHROMIUM}"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "playwright is not installed (pip install -e '.[dev]')"
    if missing is not None:
        if os.environ.get("IO_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"{missing}; .ci/run installs it")
        pytest.skip(missing)


def browser(tmp: Path) -> Iterator[Any]:
    """A headless Chromium (Debian's, never a downloaded one) with a fresh profile."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp / "profile"), executable_path=CHROMIUM if Path(CHROMIUM).exists()
            else shutil.which("chromium"), args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1200, "height": 900})
        try:
            yield context
        finally:
            context.close()

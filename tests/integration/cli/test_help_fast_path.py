"""`io --help` and `io --version` answer without typer (issue 24's `--help` target), and
say exactly what typer says.

The index's help is stored in `io_harness_cli/_index_help.py`, rendered by typer ahead of
time at Click's widest width (78). These tests hold the stored text to typer's rendering,
and the fast path's output to the typer path's at every terminal width, so a change to a
command's summary, the exit-code table or typer itself cannot leave the fast path behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from io_harness_cli._index_help import INDEX_HELP, WIDTH
from io_harness_cli.main import render_index_help
from tests.conftest import REPO

_TYPER_PATH = (
    "import sys\n"
    "sys.argv = ['io', *sys.argv[1:]]\n"
    "from io_harness_cli.main import build_app\n"
    "from io_harness_cli.commands._entry import run_app\n"
    "run_app(build_app(index=True))\n"
)
_MODULES = (
    "import sys, json\n"
    "sys.argv = ['io', *sys.argv[1:]]\n"
    "from io_harness_cli.main import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
)


def _env(columns: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    env["PYTHONPATH"] = str(REPO)
    if columns is not None:
        env["COLUMNS"] = columns
    return env


def _io(args: list[str], columns: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "io_harness_cli", *args], cwd=REPO,
                          env=_env(columns), capture_output=True, text=True, timeout=60)


def test_the_stored_index_is_what_typer_renders() -> None:
    assert render_index_help(WIDTH) == INDEX_HELP, (
        "io_harness_cli/_index_help.py is stale: run "
        "`python -m io_harness_cli.main --write-index-help`")


@pytest.mark.parametrize("columns", [None, "200", "80", "79", "60", "20"])
def test_io_help_prints_what_typer_prints_at_every_width(columns: str | None) -> None:
    fast = _io(["--help"], columns)
    typer_path = subprocess.run([sys.executable, "-c", _TYPER_PATH, "--help"], cwd=REPO,
                                env=_env(columns), capture_output=True, text=True,
                                timeout=60)
    assert fast.returncode == typer_path.returncode == 0
    assert fast.stdout == typer_path.stdout and fast.stderr == typer_path.stderr == ""
    assert "Exit codes:" in fast.stdout and "rewind" in fast.stdout


def test_io_help_and_version_import_no_typer() -> None:
    for args, said in ((["--help"], "Usage: io [OPTIONS] COMMAND"), (["--version"], "io 0.")):
        done = subprocess.run([sys.executable, "-c", _MODULES, *args], cwd=REPO,
                              env=_env(None), capture_output=True, text=True, timeout=60)
        loaded = set(json.loads(done.stderr))
        assert said in done.stdout
        assert not {"typer", "click", "harness_core"} & loaded, args
    narrow = subprocess.run([sys.executable, "-c", _MODULES, "--help"], cwd=REPO,
                            env=_env("60"), capture_output=True, text=True, timeout=60)
    assert narrow.returncode == 0
    assert '"typer"' in narrow.stderr.splitlines()[-1]  # too narrow: typer renders it


def test_io_version_says_what_the_typer_path_says() -> None:
    typer_path = subprocess.run([sys.executable, "-c", _TYPER_PATH, "--version"], cwd=REPO,
                                env=_env(None), capture_output=True, text=True, timeout=60)
    fast = _io(["--version"], None)
    assert fast.stdout == typer_path.stdout and fast.returncode == typer_path.returncode == 0

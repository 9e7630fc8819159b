"""`io`, `io --help`, `io --version` and a misspelt command are answered by the index:
every command's name and summary, no command module imported. These tests hold the
index to the commands it stands for, so the two cannot drift apart."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from io_harness_cli import _catalog as cli_catalog
from io_harness_cli import main as cli_main

_ENTRY_MODULES = {f"io_harness_cli.commands.{name}"
                  for name in ("_entry", "_start_up", "_failure")}
"""What `main` loads to run any command line: the outermost frame, not a command."""


def _render(app: typer.Typer, args: list[str], width: int) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, prog_name="io", terminal_width=width)
    return result.exit_code, result.output


@pytest.mark.parametrize("name", sorted(cli_catalog._COMMANDS))
def test_a_command_summary_is_the_first_paragraph_of_its_docstring(name: str) -> None:
    module, function, summary = cli_catalog._COMMANDS[name]
    command = getattr(importlib.import_module(f"io_harness_cli.commands.{module}"), function)
    assert inspect.getdoc(command).split("\n\n")[0] == summary


@pytest.mark.parametrize("name", sorted(cli_catalog._GROUPS))
def test_a_group_summary_is_its_help(name: str) -> None:
    group = importlib.import_module(f"io_harness_cli.commands.{name}").app
    assert group.info.help == cli_catalog._GROUPS[name]


@pytest.mark.parametrize("width", [40, 80, 200])
@pytest.mark.parametrize("args", [["--help"], [], ["rnu"], ["--bogus"], ["--version"]])
def test_the_index_answers_exactly_as_the_whole_app(args: list[str], width: int) -> None:
    whole = _render(cli_main.build_app(), args, width)
    index = _render(cli_main.build_app(index=True), args, width)
    assert index == whole
    assert whole[1]  # something was printed: the comparison compared something


def test_the_index_runs_no_command() -> None:
    code, _ = _render(cli_main.build_app(index=True), ["run", "goal"], 80)
    assert code != 0  # the placeholder refuses; main() never sends a command here


def _modules_after_main(argv: list[str]) -> tuple[int, str, set[str]]:
    code = (
        "import sys, json, atexit\n"
        "atexit.register(lambda: sys.__stderr__.write('\\n' + json.dumps(sorted(sys.modules))))\n"
        f"sys.argv = ['io', *{argv!r}]\n"
        "from io_harness_cli.main import main\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    *text, modules = result.stderr.rstrip("\n").split("\n")
    return result.returncode, result.stdout + "\n".join(text), set(json.loads(modules))


@pytest.mark.parametrize("argv", [["--help"], [], ["--version"], ["rnu"]])
def test_io_without_a_command_imports_no_command_module(argv: list[str]) -> None:
    code, output, loaded = _modules_after_main(argv)
    assert output.strip()
    assert not {m for m in loaded if m.startswith("io_harness_cli.commands.")
                and m not in _ENTRY_MODULES}


def test_a_command_named_after_an_option_gets_the_whole_app() -> None:
    """`io --version run` still prints the version; `io --help run` the index; neither is
    parsed by the index, since a command is named."""
    code, output, loaded = _modules_after_main(["--help", "run"])
    assert code == 0 and "Commands:" in output
    assert "io_harness_cli.commands.run" in loaded

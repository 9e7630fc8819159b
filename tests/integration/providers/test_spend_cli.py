"""`io spend` output: the rich table with a bar per row on a terminal, plain text and no
rich import otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from io_harness_cli.commands.spend import bar
from tests.fakes.vendor_server import FakeVendorServer
from tests.integration.providers.conftest import (
    SERVED,
    Cli,
    provider_toml,
    tool_conversation,
    write_workspace,
)

StartFake = Callable[..., FakeVendorServer]


def _workspace_with_spend(cli: Cli, fakes: StartFake, tmp_path: Path) -> Path:
    fake = fakes("openai", responder=tool_conversation("openai", 2))
    prices = (f'[prices]\nas_of = "2026-01-01"\n[prices.models."{SERVED}"]\n'
              "input_per_mtok = 3.0\noutput_per_mtok = 15.0\n")
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake), prices)
    assert cli("run", "go", "-w", str(ws), "--json").returncode == 0
    return ws


def test_a_terminal_gets_a_table_with_a_bar_per_row(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    ws = _workspace_with_spend(cli, fakes, tmp_path)
    env = cli.env()
    env.pop("NO_COLOR")
    env.update(FORCE_COLOR="1", COLUMNS="120")
    result = subprocess.run([sys.executable, "-m", "io_harness_cli", "spend", "-w", str(ws),
                             "--by", "run"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "spend by run, prices as of 2026-01-01" in result.stdout
    assert "█" in result.stdout and "total" in result.stdout
    assert "\t" not in result.stdout


def test_spend_json_and_plain_output_never_import_rich(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    ws = _workspace_with_spend(cli, fakes, tmp_path)
    code = (
        "import sys, json\n"
        f"sys.argv = ['io', 'spend', '-w', {str(ws)!r}] + sys.argv[1:]\n"
        "from io_harness_cli.main import app\n"
        "try:\n"
        "    app(prog_name='io')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.__stderr__.write(json.dumps(sorted(sys.modules)))\n"
    )
    for extra in (["--json"], []):
        result = subprocess.run([sys.executable, "-c", code, *extra], env=cli.env(),
                                capture_output=True, text=True, timeout=60)
        loaded = set(json.loads(result.stderr.strip().splitlines()[-1]))
        assert "rich" not in loaded and "rich.console" not in loaded, extra
        assert result.stdout.strip(), extra


def test_bars_fill_in_eighths_of_a_cell() -> None:
    assert bar(0.0, 4) == "    "
    assert bar(1.0, 4) == "████"
    assert bar(0.5, 4) == "██  "
    assert bar(1 / 32, 4) == "▏   "
    assert bar(7.0, 2) == "██"  # clamped

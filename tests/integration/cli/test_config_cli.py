"""`io config check` runs the validation `io run` runs; read-only commands resolve only
the store; `io config schema|init|show --toml` (real `io` subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

COST_WITHOUT_PRICES = "[budget]\nmax_cost_usd = 1.0\n"


def test_check_and_run_both_refuse_max_cost_without_prices(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", [replay_line("done")], toml_extra=COST_WITHOUT_PRICES)
    check = run_io(["config", "check", "-w", str(ws)])
    run = run_io(["run", "go", "-w", str(ws), "--json"])
    assert check.returncode == 2 and run.returncode == 2
    message = "[budget] max_cost_usd needs a [prices] table"
    assert message in check.stderr and message in run.stderr
    assert "config ok" not in check.stderr


def test_check_for_run_and_run_both_refuse_a_config_without_provider(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text('[contract]\ngoal = "g"\n')
    check = run_io(["config", "check", "-w", str(ws), "--for-run"])
    run = run_io(["run", "-w", str(ws), "--json"])
    assert check.returncode == run.returncode == 2
    assert "no [provider] is configured" in check.stderr
    assert "no [provider] is configured" in run.stderr


def test_check_accepts_what_run_accepts(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", [replay_line("done")])
    check = run_io(["config", "check", "-w", str(ws)])
    assert check.returncode == 0, check.stderr
    assert "config ok" in check.stderr
    assert run_io(["run", "go", "-w", str(ws), "--json"]).returncode == 0


def test_read_only_commands_do_not_need_the_provider_key(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", [replay_line("done")])
    first = run_io(["run", "go", "-w", str(ws), "--json"])
    assert first.returncode == 0, first.stderr
    run_id = json_lines(first.stdout)[-1]["run_id"]
    (ws / "io.toml").write_text(
        '[provider]\nkind = "openai"\nmodel = "m"\napi_key = "${env:IO_TEST_UNSET_KEY}"\n'
        '[[mcp]]\nname = "x"\ncommand = "x"\nenv = { T = "${env:IO_TEST_UNSET_KEY}" }\n'
    )
    for argv in (["runs", "--json"], ["trace", run_id, "--json"], ["spend", "--json"],
                 ["session", "list", "--json"]):
        result = run_io([*argv, "-w", str(ws)])
        assert result.returncode == 0, (argv, result.stderr)
    run = run_io(["run", "go", "-w", str(ws), "--json"])
    assert run.returncode == 2 and "IO_TEST_UNSET_KEY is not set" in run.stderr


def test_read_only_commands_still_refuse_an_unknown_key(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", [replay_line("done")], toml_extra="[budget]\nmax_stepz = 1\n")
    result = run_io(["runs", "-w", str(ws)])
    assert result.returncode == 2
    assert "unknown key 'budget.max_stepz'" in result.stderr


def test_config_schema_prints_the_json_schema() -> None:
    result = run_io(["config", "schema"])
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    assert schema["$schema"].endswith("/2020-12/schema")
    assert "provider" in schema["properties"] and schema["additionalProperties"] is False


def test_config_init_writes_a_commented_starter_that_check_accepts(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.pytest.ini_options]\n')
    result = run_io(["config", "init", "-w", str(ws)])
    assert result.returncode == 0, result.stderr
    text = (ws / "io.toml").read_text()
    assert text.count("\n# ") > 10  # every table and key explained
    assert "[[contract.verify]]" in text and "pytest" in text
    check = run_io(["config", "check", "-w", str(ws)], env={"ANTHROPIC_API_KEY": "k"})
    assert check.returncode == 0, check.stderr


def test_config_init_never_overwrites(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text("# mine\n")
    result = run_io(["config", "init", "-w", str(ws)])
    assert result.returncode == 2
    assert "already exists" in result.stderr
    assert (ws / "io.toml").read_text() == "# mine\n"


def test_show_toml_redacts_secrets_and_check_accepts_it(tmp_path: Path) -> None:
    secret = "sk-live-must-not-appear-0123"
    ws = make_workspace(tmp_path / "ws", [replay_line("done")], toml_extra=(
        '[policy]\ndeny_exec = ["git push*"]\n'
        '[[mcp]]\nname = "t"\ncommand = "x"\nenv = { TOKEN = "${env:IO_TEST_SECRET}" }\n'
    ))
    (ws / "io.local.toml").write_text('[policy]\nallow_exec = ["pytest*"]\n[budget]\nmax_steps = false\n')
    shown = run_io(["config", "show", "--toml", "-w", str(ws)], env={"IO_TEST_SECRET": secret})
    assert shown.returncode == 0, shown.stderr
    assert secret not in shown.stdout and 'TOKEN = "***"' in shown.stdout
    assert "max_steps = false" in shown.stdout
    merged = tmp_path / "merged.toml"
    merged.write_text(shown.stdout)
    other = tmp_path / "other"
    other.mkdir()
    check = run_io(["config", "check", "-w", str(other), "-c", str(merged)])
    assert check.returncode == 0, check.stderr

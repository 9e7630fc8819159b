"""Config that helps (#23): `io config init --provider KIND` writes a file `io config
check` accepts with no key set; `check` reports an unset key (or a missing
`[provider]`) as a warning unless `--for-run`; commands that call no model never need
the provider's key, which is resolved only when a provider is built."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import io_cmd
from tests.integration.cli.helpers import make_workspace, replay_line

_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "IO_TEST_UNSET_KEY")
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def io(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """`io ARGS` with every provider key variable unset (plus `env`)."""
    full = {k: v for k, v in os.environ.items() if k not in _KEYS}
    full.update(env)
    return subprocess.run([*io_cmd(), *args], env=full, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("kind,variable", [
    ("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY"),
    ("openrouter", "OPENROUTER_API_KEY")])
def test_init_for_each_vendor_passes_check_without_its_key_and_for_run_needs_it(
        tmp_path: Path, kind: str, variable: str) -> None:
    init = io(["config", "init", "-w", str(tmp_path), "--provider", kind])
    assert init.returncode == 0, init.stderr
    assert f'kind = "{kind}"' in (tmp_path / "io.toml").read_text()
    check = io(["config", "check", "-w", str(tmp_path)])
    assert check.returncode == 0, check.stderr
    assert "io: warning: 'provider.api_key'" in check.stderr
    assert f"environment variable {variable} is not set" in check.stderr
    assert "config ok" in check.stderr and "1 warning(s)" in check.stderr
    for_run = io(["config", "check", "-w", str(tmp_path), "--for-run"])
    assert for_run.returncode == 2 and f"{variable} is not set" in for_run.stderr
    ready = io(["config", "check", "-w", str(tmp_path), "--for-run"], **{variable: "k"})
    assert ready.returncode == 0, ready.stderr
    assert "ready to run" in ready.stderr and "warning" not in ready.stderr


def test_init_scripted_writes_a_replay_and_runs_offline(tmp_path: Path) -> None:
    init = io(["config", "init", "-w", str(tmp_path), "--provider", "scripted"])
    assert init.returncode == 0, init.stderr
    assert (tmp_path / "replay.jsonl").exists() and "replay.jsonl" in init.stderr
    check = io(["config", "check", "-w", str(tmp_path), "--for-run"])
    assert check.returncode == 0 and "warning" not in check.stderr, check.stderr
    text = (tmp_path / "io.toml").read_text().replace('backend = "auto"', 'backend = "floor"')
    (tmp_path / "io.toml").write_text(text)
    run = io(["run", "go", "-w", str(tmp_path), "--json"])
    assert run.returncode == 0, run.stderr


def test_init_refuses_an_unknown_provider(tmp_path: Path) -> None:
    result = io(["config", "init", "-w", str(tmp_path), "--provider", "bogus"])
    assert result.returncode == 2 and "anthropic, openai, openrouter, scripted" in result.stderr
    assert not (tmp_path / "io.toml").exists() and "Traceback" not in result.stderr


def test_check_accepts_the_policy_check_example_which_has_no_provider() -> None:
    check = io(["config", "check", "-w", str(EXAMPLES / "policy-check")])
    assert check.returncode == 0, check.stderr
    assert "warning: no [provider] is configured" in check.stderr
    for_run = io(["config", "check", "-w", str(EXAMPLES / "policy-check"), "--for-run"])
    assert for_run.returncode == 2 and "no [provider] is configured" in for_run.stderr


def test_check_warns_when_no_key_is_configured_and_the_vendor_variable_is_unset(
        tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text('[provider]\nkind = "openai"\nmodel = "m"\n')
    check = io(["config", "check", "-w", str(tmp_path)])
    assert check.returncode == 0, check.stderr
    assert "warning: openai: no API key: set OPENAI_API_KEY" in check.stderr
    assert io(["config", "check", "-w", str(tmp_path), "--for-run"]).returncode == 2


def test_an_unset_key_s_message_names_its_reference_unredacted(tmp_path: Path) -> None:
    """The reference `${env:NAME}` is not a secret: the warning and the error show it
    (it was printed as `[REDACTED]`, the unresolved reference taken for the key)."""
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "openai"\nmodel = "m"\napi_key = "${env:IO_TEST_UNSET_KEY}"\n')
    for args in (["config", "check"], ["config", "check", "--for-run"], ["run", "go"]):
        result = io([*args, "-w", str(tmp_path)])
        assert "${env:IO_TEST_UNSET_KEY}" in result.stderr, (args, result.stderr)
        assert "REDACTED" not in result.stderr, (args, result.stderr)


def test_check_still_refuses_a_real_error_beside_an_unset_key(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "openai"\nmodel = "m"\napi_key = "${env:IO_TEST_UNSET_KEY}"\n'
        '[budget]\nmax_cost_usd = 1.0\n')
    check = io(["config", "check", "-w", str(tmp_path)])
    assert check.returncode == 2 and "max_cost_usd needs a [prices] table" in check.stderr


@pytest.mark.parametrize("argv", [
    ["toolchain"], ["templates", "list"], ["config", "show"], ["config", "show", "--json"],
    ["runs"], ["tool", "list_dir", "--args", "{}"]])
def test_commands_that_call_no_model_never_need_the_provider_key(
        tmp_path: Path, argv: list[str]) -> None:
    ws = make_workspace(tmp_path / "ws", [replay_line("done")])
    (ws / "io.toml").write_text(
        '[provider]\nkind = "anthropic"\nmodel = "m"\napi_key = "${env:IO_TEST_UNSET_KEY}"\n'
        '[sandbox]\nbackend = "floor"\n')
    result = io([*argv, "-w", str(ws)])
    assert result.returncode == 0, result.stderr
    assert "IO_TEST_UNSET_KEY" not in result.stderr
    run = io(["run", "go", "-w", str(ws), "--json"])
    assert run.returncode == 2 and "IO_TEST_UNSET_KEY is not set" in run.stderr

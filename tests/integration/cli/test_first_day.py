"""Rough edges an operator meets on the first day (issue 37), one test each: a refused
config names a further step, no provider names `io config init`, `--scratch` copies do
not pile up, `io spend` counts the workspace `io runs` lists, a session's paused turn is
not built on, `io trace --html` counts bytes, `io doctor` checks the provider."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from io_harness_cli.commands._resume_line import resume_command
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def test_config_checks_hint_points_further_than_itself(tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "io.toml").write_text('[budget]\nmax_steps = "x"\n')
    checked = run_io(["config", "check", "-w", str(ws)])
    assert checked.returncode == 2 and "wrong type" in checked.stderr
    hint = [line for line in checked.stderr.splitlines() if line.startswith("hint:")]
    assert hint and "io config check" not in hint[0] and "io config show" in hint[0]
    ran = run_io(["run", "g", "-w", str(ws)])  # elsewhere it still names `io config check`
    assert ran.returncode == 2 and "`io config check`" in ran.stderr


def test_a_run_with_no_provider_names_io_config_init(tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    ran = run_io(["run", "hello", "-w", str(ws)])
    assert ran.returncode == 2 and "no [provider] is configured" in ran.stderr
    assert "io config init" in ran.stderr and "Traceback" not in ran.stderr


def _scratch_copies(home: Path) -> list[Path]:
    return sorted((home / "tmp").glob("io-scratch-*"))


def test_scratch_copies_go_when_no_run_was_made_or_the_run_has_ended(
        tmp_path: Path, isolated_env: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("writing", ("write_file", {"path": "new.txt", "content": "x\n"})),
        replay_line("done")])
    bad = run_io(["run", "--scratch", "-w", str(ws), "--max-steps", "1", "one", "two"])
    assert bad.returncode == 2 and "one GOAL" in bad.stderr
    assert _scratch_copies(isolated_env) == []  # the usage error left no copy behind
    done = run_io(["run", "g", "--scratch", "-w", str(ws)])
    assert done.returncode == 0, done.stderr
    assert "b/new.txt" in done.stderr and "scratch copy removed" in done.stderr
    assert _scratch_copies(isolated_env) == [] and not (ws / "new.txt").exists()
    stopped = run_io(["run", "g", "--scratch", "-w", str(ws), "--max-steps", "1"])
    assert stopped.returncode == 3, stopped.stderr  # it can go on: its copy stays
    kept = re.search(r"scratch copy kept at (\S+)", stopped.stderr)
    assert kept is not None and Path(kept.group(1)).is_dir()
    assert len(_scratch_copies(isolated_env)) == 1


def test_spend_counts_the_workspace_runs_lists_and_all_counts_every_one(
        tmp_path: Path) -> None:
    one = make_workspace(tmp_path / "one", [replay_line("done", tokens=10)])
    two = make_workspace(tmp_path / "two", [replay_line("done", tokens=30)])
    for ws in (one, two):
        assert run_io(["run", "g", "-w", str(ws)]).returncode == 0
    mine = json.loads(run_io(["spend", "-w", str(one), "--json"]).stdout)
    every = json.loads(run_io(["spend", "-w", str(one), "--all", "--json"]).stdout)
    assert sum(g["prompt_tokens"] for g in mine["groups"]) == 10
    assert sum(g["prompt_tokens"] for g in every["groups"]) == 40
    listed = json_lines(run_io(["runs", "-w", str(one), "--json"]).stdout)
    assert len(listed) == 1 == sum(g["calls"] for g in mine["groups"])


def test_a_session_turn_is_not_taken_on_top_of_a_paused_turn(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("asking", ("ask_question", {"question": "Which colour?"})),
        replay_line("blue"), replay_line("branch answer")])
    session = run_io(["session", "new", "-w", str(ws)]).stdout.strip()
    first = run_io(["session", "turn", session, "pick", "-w", str(ws), "--json"])
    assert first.returncode == 4, first.stderr
    run_id = str(json_lines(first.stdout)[-1]["run_id"])
    second = run_io(["session", "turn", session, "and then?", "-w", str(ws)])
    assert second.returncode == 2 and "is paused" in second.stderr, second.stderr
    assert f"io resume {run_id} --answer" in second.stderr
    shown = json.loads(run_io(["session", "show", session, "-w", str(ws), "--json"]).stdout)
    assert len(shown["turns"]) == 1  # no second turn was started
    answered = run_io(["resume", run_id, "--answer", "blue", "-w", str(ws)])
    assert answered.returncode == 0 and answered.stdout == "blue\n", answered.stderr


def test_trace_html_reports_the_bytes_it_wrote(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("ünïcödé ✓ — done")])
    ran = run_io(["run", "grüße ✓", "-w", str(ws), "--json"])
    run_id = str(json_lines(ran.stdout)[-1]["run_id"])
    page = tmp_path / "page.html"
    wrote = run_io(["trace", run_id, "-w", str(ws), "--html", "-o", str(page)])
    assert wrote.returncode == 0, wrote.stderr
    said = re.search(r"\(([\d,]+) bytes\)", wrote.stderr)
    assert said is not None and int(said.group(1).replace(",", "")) == page.stat().st_size
    assert len(page.read_text(encoding="utf-8")) < page.stat().st_size  # not characters


def test_doctor_says_which_provider_and_whether_its_key_is_set(tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    none = json.loads(run_io(["doctor", "-w", str(ws), "--json"]).stdout)["provider"]
    assert none["ok"] is False and "io config init" in none["fix"]
    (ws / "io.toml").write_text('[provider]\nkind = "anthropic"\nmodel = "claude-x"\n'
                                'api_key = "${env:IO_TEST_DOCTOR_KEY}"\n')
    unset = run_io(["doctor", "-w", str(ws)])
    assert "provider: FAILED: anthropic (model claude-x)" in unset.stdout
    assert "IO_TEST_DOCTOR_KEY is not set" in unset.stdout
    keyed = run_io(["doctor", "-w", str(ws)], env={"IO_TEST_DOCTOR_KEY": "sk-test"})
    assert "provider: ok: anthropic (model claude-x): its key is set" in keyed.stdout
    assert "sk-test" not in keyed.stdout


@pytest.mark.parametrize(("status", "kind", "reason", "command"), [
    ("paused", "approval", None, "io resume R --approve"),
    ("paused", "question", None, 'io resume R --answer "…"'),
    ("interrupted", None, "interrupted (Ctrl-C)", "io resume R"),
    ("errored", None, "provider down", "io resume R"),
    ("stopped", None, "budget: the step budget of 3 is spent", 'io resume R --max-steps "…"'),
    ("stopped", None, "stalled: the same call repeated", 'io resume R --max-steps "…"'),
    ("stopped", None, "budget: the token budget of 9 is spent", 'io resume R --max-tokens "…"'),
    ("stopped", None, "budget: the cost budget of $1 is spent", 'io resume R --max-cost "…"'),
    ("stopped", None, "budget: the wall-clock budget of 5s is spent",
     'io resume R --max-wall "…"'),
    ("finished", None, "done", None),
    ("failed", None, "a gate failed", None),
    ("running", None, None, None),
])
def test_the_resume_command_of_each_status(status: str, kind: str | None, reason: str | None,
                                           command: str | None) -> None:
    assert resume_command("R", status, pause_kind=kind, reason=reason) == command

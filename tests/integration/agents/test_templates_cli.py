"""`io run --template NAME KEY=VALUE -- ARGS`, `io templates list`, and the skills
catalogue shared by a tree, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from harness_core import Store
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def _workspace(root: Path, lines: list[str]) -> Path:
    ws = make_workspace(root, lines)
    (ws / ".io" / "templates").mkdir(parents=True)
    (ws / ".io" / "templates" / "fix.md").write_text(
        "---\ndescription: Fix one module\n---\nFix {{module}}: $ARGUMENTS\n")
    return ws


def _goal_of(stdout: str) -> str:
    return str(json_lines(stdout)[0]["goal"])


def test_template_renders_into_the_goal(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "w", [replay_line("done")])
    result = run_io(["run", "--template", "fix", "module=parser", "-w", str(ws), "--json",
                     "--", "the", "tests", "fail"])
    assert result.returncode == 0, result.stderr
    assert _goal_of(result.stdout) == "Fix parser: the tests fail\n"


def test_template_mistakes_are_usage_errors_before_any_run(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "w", [replay_line("done")])
    cases = [
        (["--template", "fix", "--", "x"], "module"),                  # missing value
        (["--template", "fix", "module=a", "mdule=b"], "mdule"),       # unknown key
        (["--template", "nope"], "available: fix"),                    # unknown template
        (["--template", "fix", "module=a", "words"], "KEY=VALUE"),     # args without --
    ]
    for args, needle in cases:
        result = run_io(["run", "-w", str(ws), *args])
        assert result.returncode == 2, (args, result.stderr)
        assert needle in result.stderr and "Traceback" not in result.stderr
    assert run_io(["runs", "--json"]).stdout.strip() == ""  # nothing ran


def test_templates_list_shows_workspace_and_user_templates(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "w", [replay_line("done")])
    import os

    user = Path(os.environ["XDG_CONFIG_HOME"]) / "io" / "templates"
    user.mkdir(parents=True)
    (user / "review.md").write_text("Review $ARGUMENTS")
    listed = json_lines(run_io(["templates", "list", "-w", str(ws), "--json"]).stdout)
    assert [(t["name"], t["description"]) for t in listed] == [
        ("fix", "Fix one module"), ("review", "")]
    human = run_io(["templates", "list", "-w", str(ws)])
    assert human.returncode == 0 and "fix" in human.stdout and "review" in human.stdout


def test_skills_catalogue_reaches_every_run_of_a_tree_and_bodies_are_read_on_demand(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("", ("spawn_agent", {"goal": "use the skill"})),
        replay_line("", ("read_file", {"path": ".io/skills/release/SKILL.md"})),
        replay_line("child read it"),
        replay_line("done"),
    ])
    skill = ws / ".io" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\ndescription: How to cut a release\n---\nBODY-STEP: bump the version\n")
    result = run_io(["run", "lead", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    root = str(json_lines(result.stdout)[-1]["run_id"])
    import os

    with Store(os.environ["IO_STORE"]) as store:
        runs = store.tree_runs(root)
        assert len(runs) == 2
        for run in runs:
            system = store.messages(run.run_id)[0].content
            assert "release: How to cut a release" in system
            assert "BODY-STEP" not in system
        (entry,) = store.ledger(runs[1].run_id)
        assert "BODY-STEP: bump the version" in (entry.observation or "")
    assert json.loads(json.dumps(root))

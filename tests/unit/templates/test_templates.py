"""Templates render strictly and set nothing but text; the skills catalogue holds names
and descriptions only."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import (
    RunSpec,
    Skill,
    TaskContract,
    Templates,
    UsageError,
    Workspace,
    discover_skills,
)
from harness_core.run._prompt import opening_messages


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, user = tmp_path / "ws" / ".io" / "templates", tmp_path / "user" / "templates"
    ws.mkdir(parents=True)
    user.mkdir(parents=True)
    return ws, user


def test_render_fills_placeholders_and_arguments_in_one_pass(tmp_path: Path) -> None:
    ws, user = _dirs(tmp_path)
    (ws / "fix.md").write_text("---\ndescription: Fix a bug\n---\nFix {{ module }} so that"
                               " $ARGUMENTS. Mind {{module}}.\n")
    text = Templates([ws, user]).render("fix", {"module": "{{x}} $ARGUMENTS"},
                                        "tests pass")
    assert text == ("Fix {{x}} $ARGUMENTS so that tests pass. Mind {{x}} $ARGUMENTS.\n")


@pytest.mark.parametrize(("values", "arguments", "message"), [
    ({}, "", "module"),                                 # a missing value is an error
    ({"module": "a", "typo": "b"}, "", "typo"),         # so is a value with no placeholder
])
def test_render_is_strict(tmp_path: Path, values: dict[str, str], arguments: str,
                          message: str) -> None:
    ws, user = _dirs(tmp_path)
    (ws / "t.md").write_text("Work on {{module}}.")
    with pytest.raises(UsageError, match=message):
        Templates([ws, user]).render("t", values, arguments)


def test_arguments_without_a_place_to_go_are_an_error(tmp_path: Path) -> None:
    ws, user = _dirs(tmp_path)
    (ws / "t.md").write_text("No arguments here.")
    with pytest.raises(UsageError, match=r"\$ARGUMENTS"):
        Templates([ws, user]).render("t", {}, "extra words")


def test_the_workspace_shadows_the_user_and_unknown_names_list_what_exists(
        tmp_path: Path) -> None:
    ws, user = _dirs(tmp_path)
    (ws / "a.md").write_text("workspace a")
    (user / "a.md").write_text("user a")
    (user / "b.md").write_text("---\ndescription: only the user's\n---\nuser b")
    templates = Templates([ws, user])
    assert templates.render("a", {}) == "workspace a"
    listed = [(t.name, t.description, t.shadowed) for t in templates.available()]
    assert listed == [("a", "", False), ("a", "", True), ("b", "only the user's", False)]
    with pytest.raises(UsageError, match="available: a, b"):
        templates.render("nope", {})
    with pytest.raises(UsageError):
        templates.render("../outside", {})


def test_skills_catalogue_reads_front_matter_only_and_reaches_the_system_prompt(
        tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for name, text in {
        "release": "---\nname: release\ndescription: Cut a release with the changelog\n---\n"
                   "SECRET-BODY-STEP-1\n",
        "broken": "no front matter at all\n",
    }.items():
        (root / ".io" / "skills" / name).mkdir(parents=True)
        (root / ".io" / "skills" / name / "SKILL.md").write_text(text)
    skills = discover_skills(root)
    assert skills == (Skill("release", "Cut a release with the changelog",
                            ".io/skills/release/SKILL.md"),)
    spec = RunSpec(workspace=Workspace(root), contract=TaskContract(goal="g"), skills=skills)
    system = opening_messages(spec)[0].content
    assert "release: Cut a release with the changelog (.io/skills/release/SKILL.md)" in system
    assert "SECRET-BODY-STEP-1" not in system


def test_a_skill_outside_the_workspace_is_left_out(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".io" / "skills").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text("---\ndescription: escaped\n---\n")
    (root / ".io" / "skills" / "evil").symlink_to(outside)
    assert discover_skills(root) == ()

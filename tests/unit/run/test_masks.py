"""`read_masks`: the workspace paths the sandbox masks, decided by the policy itself."""

from __future__ import annotations

import os
from pathlib import Path

from harness_core.policy import ActKind, Effect, Policy, Rule
from harness_core.run._masks import read_masks


def deny(*patterns: str) -> Policy:
    return Policy(rules=tuple(Rule(Effect.DENY, ActKind.READ, p, "project") for p in patterns))


def test_no_deny_read_rule_means_nothing_to_walk(tmp_path: Path) -> None:
    assert read_masks(tmp_path, Policy()) is None


def test_refused_directories_files_globs_and_hard_links(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "a.env").write_text("x")
    (tmp_path / "src" / "deep").mkdir(parents=True)
    (tmp_path / "src" / "deep" / "k.pem").write_text("x")
    (tmp_path / "src" / "ok.py").write_text("x")
    os.link(tmp_path / "secrets" / "a.env", tmp_path / "src" / "alias")
    (tmp_path / "link.pem").symlink_to(tmp_path / "src" / "ok.py")
    masks = read_masks(tmp_path, deny("secrets/**", "**/*.pem"))
    assert masks is not None
    found = {p.relative_to(tmp_path.resolve()).as_posix() for p in masks()}
    assert found == {"secrets", "src/deep/k.pem", "src/alias"}


def test_a_file_created_later_is_found_at_the_next_start(tmp_path: Path) -> None:
    masks = read_masks(tmp_path, deny("**/*.key"))
    assert masks is not None and masks() == []
    (tmp_path / "new.key").write_text("x")
    assert [p.name for p in masks()] == ["new.key"]

"""`read_masks`: the workspace paths the sandbox masks, decided by the policy itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


_UNCOVERABLE = """
import sys
from pathlib import Path
from harness_core.errors import SandboxUnavailable
from harness_core.policy import ActKind, Effect, Policy, Rule
from harness_core.run._masks import read_masks
from harness_core.sandbox._reads import plan_reads

root, outer = Path(sys.argv[1]), Path(sys.argv[2])
masks = read_masks(root, Policy(rules=(Rule(Effect.DENY, ActKind.READ, "**/*.pem", "project"),)))
for attempt in (masks, lambda: plan_reads({}, masked=[outer / "key.pem"], workdir=outer)):
    try:
        attempt()
    except SandboxUnavailable as exc:
        print("refused:", exc)
    else:
        print("passed")
"""


def test_what_no_mask_can_cover_stops_the_command(tmp_path: Path) -> None:
    # Run without the capabilities that let root ignore permissions, so the listing and
    # the lstat are really refused: a workspace root io cannot list, and a refused path
    # whose only visible folder above it is the workspace itself.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to take the permission-bypass capabilities away")
    root, outer = tmp_path / "unlisted", tmp_path / "unsearchable"
    root.mkdir()
    outer.mkdir()
    (outer / "key.pem").write_text("x")
    root.chmod(0)
    outer.chmod(0o644)  # its names can be listed, not looked up
    drop = "-dac_override,-dac_read_search"
    try:
        done = subprocess.run(
            ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}", sys.executable, "-c",
             _UNCOVERABLE, str(root), str(outer)],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    finally:
        root.chmod(0o700)
        outer.chmod(0o700)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("refused: cannot list the workspace")
    assert second.startswith("refused: cannot look at") and "key.pem" in second

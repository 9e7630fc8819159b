"""The environment scrub, the program lookup and the rlimit plan."""

from __future__ import annotations

import os
import resource
import stat
from pathlib import Path

import pytest

from harness_core.errors import ToolError
from harness_core.sandbox import SandboxLimits
from harness_core.sandbox._process import resolve_program, rlimit_plan, scrub_env


@pytest.mark.parametrize(
    ("name", "allow", "kept"),
    [
        ("PATH", (), True),
        ("HOME", (), True),
        ("LANG", (), True),
        ("LC_ALL", (), True),
        ("LC_CTYPE", (), True),
        ("TERM", (), True),
        ("TZ", (), True),
        ("TMPDIR", (), True),
        ("ANTHROPIC_API_KEY", (), False),
        ("OPENAI_API_KEY", (), False),
        ("LD_PRELOAD", (), False),
        ("PYTHONPATH", (), False),
        ("SSH_AUTH_SOCK", (), False),
        ("LC_MESSAGES", (), False),
        ("NPM_TOKEN", ("NPM_TOKEN",), True),
        ("path", (), False),
    ],
)
def test_scrub_keeps_only_the_allowlist(name: str, allow: tuple[str, ...], kept: bool) -> None:
    assert (name in scrub_env({name: "v"}, allow)) is kept


def test_scrub_never_invents_variables() -> None:
    assert scrub_env({}, ("X",)) == {}


def make_exe(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_program_is_found_on_the_scrubbed_path(tmp_path: Path) -> None:
    exe = make_exe(tmp_path / "tool")
    assert resolve_program("tool", {"PATH": str(tmp_path)}, tmp_path) == str(exe)


def test_missing_program_names_itself_and_path(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="program not found on PATH: nope"):
        resolve_program("nope", {"PATH": str(tmp_path)}, tmp_path)


def test_relative_program_is_resolved_against_the_command_cwd(tmp_path: Path) -> None:
    exe = make_exe(tmp_path / "run.sh")
    assert resolve_program("./run.sh", {"PATH": ""}, tmp_path) == str(exe)
    with pytest.raises(ToolError):
        resolve_program("./missing.sh", {"PATH": ""}, tmp_path)


def test_non_executable_file_is_not_a_program(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("x")
    with pytest.raises(ToolError):
        resolve_program("data", {"PATH": str(tmp_path)}, tmp_path)


def test_rlimit_plan_maps_each_limit_and_always_disables_core_dumps() -> None:
    plan = {
        res: (soft, hard)
        for res, soft, hard in rlimit_plan(
            SandboxLimits(memory_mb=64, cpu_seconds=3, open_files=100, max_processes=None)
        )
    }
    assert plan[resource.RLIMIT_CORE] == (0, 0)
    assert plan[resource.RLIMIT_AS] == (64 * 1024 * 1024, 64 * 1024 * 1024)
    assert plan[resource.RLIMIT_CPU] == (3, 4)
    assert plan[resource.RLIMIT_NOFILE] == (100, 100)
    assert resource.RLIMIT_NPROC not in plan


def test_unset_limits_are_left_alone() -> None:
    plan = rlimit_plan(SandboxLimits(memory_mb=None, cpu_seconds=None, open_files=None))
    assert [res for res, _, _ in plan] == [resource.RLIMIT_CORE]


def test_limits_never_exceed_the_runner_hard_limit() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no finite hard limit on open files here")
    plan = {res: (soft, h) for res, soft, h in rlimit_plan(SandboxLimits(open_files=hard + 1000))}
    assert plan[resource.RLIMIT_NOFILE] == (hard, hard)
    assert os.sysconf("SC_OPEN_MAX") > 0

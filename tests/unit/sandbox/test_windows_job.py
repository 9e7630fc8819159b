"""The Job Object limits requested, as data (Windows is not exercised on this project's CI)."""

from __future__ import annotations

from harness_core.sandbox import SandboxLimits
from harness_core.sandbox._windows import (
    JOB_OBJECT_LIMIT_ACTIVE_PROCESS,
    JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOB_OBJECT_LIMIT_PROCESS_MEMORY,
    JOB_OBJECT_LIMIT_PROCESS_TIME,
    job_limits,
    merge_job_limits,
    scrub_windows_env,
)

ALWAYS = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION


def test_every_limit_is_requested_from_the_job() -> None:
    wanted = job_limits(SandboxLimits(memory_mb=512, cpu_seconds=30, max_processes=64))
    assert wanted == {
        "LimitFlags": ALWAYS
        | JOB_OBJECT_LIMIT_PROCESS_MEMORY
        | JOB_OBJECT_LIMIT_PROCESS_TIME
        | JOB_OBJECT_LIMIT_ACTIVE_PROCESS,
        "ProcessMemoryLimit": 512 * 1024 * 1024,
        "PerProcessUserTimeLimit": 30 * 10_000_000,
        "ActiveProcessLimit": 64,
    }


def test_unset_limits_are_not_requested_but_the_tree_kill_is() -> None:
    wanted = job_limits(SandboxLimits(memory_mb=None, cpu_seconds=None, max_processes=None))
    assert wanted == {"LimitFlags": ALWAYS}


def test_an_uncontained_job_only_kills_on_close() -> None:
    assert job_limits(SandboxLimits(), contain=False) == {"LimitFlags": ALWAYS}


def test_limits_are_written_into_pywin32s_structure() -> None:
    info: dict[str, object] = {
        "BasicLimitInformation": {
            "LimitFlags": 0,
            "PerProcessUserTimeLimit": 0,
            "ActiveProcessLimit": 0,
            "PriorityClass": 0,
        },
        "ProcessMemoryLimit": 0,
        "JobMemoryLimit": 0,
    }
    merged = merge_job_limits(
        info, job_limits(SandboxLimits(memory_mb=1, cpu_seconds=2, max_processes=3))
    )
    basic = merged["BasicLimitInformation"]
    assert isinstance(basic, dict)
    assert basic["ActiveProcessLimit"] == 3
    assert basic["PerProcessUserTimeLimit"] == 20_000_000
    assert basic["PriorityClass"] == 0
    assert merged["ProcessMemoryLimit"] == 1024 * 1024
    assert merged["JobMemoryLimit"] == 0


def test_windows_scrub_matches_names_case_insensitively() -> None:
    env = {"Path": "C:\\bin", "SystemRoot": "C:\\Windows", "ANTHROPIC_API_KEY": "k"}
    assert scrub_windows_env(env, ()) == {"Path": "C:\\bin", "SystemRoot": "C:\\Windows"}

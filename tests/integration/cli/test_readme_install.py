"""`io` installed the way the README installs it (`pip install . pytest`, no dev extras,
in a fresh venv without the system's site-packages) answers every bad command line with
exit 2 and one `io: error:` line plus a hint: never a traceback, never "internal error".

The dev extras bring libraries typer itself no longer installs (click, since typer 0.28
vendors its own); a code path that imports one works in the dev environment and crashes
for a user, so this test builds the user's environment. The venv is built once per test
session (shared by xdist workers under a lock) from this checkout; pip reaches PyPI.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.timeout(1500)


def _session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's basetemp sits in the session's own directory: share it.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def readme_io(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `io` console script of a venv made as the README says."""
    root = _session_dir(tmp_path_factory) / "readme-install"
    root.mkdir(parents=True, exist_ok=True)
    venv = root / "venv"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "done").exists():
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_USER")}
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
            build = root / "src"  # pip builds in place: a copy keeps the checkout clean
            _copy_checkout(build)
            result = subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                 "--disable-pip-version-check", ".", "pytest"],
                cwd=build, env=env, capture_output=True, text=True, timeout=1200)
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
            (root / "done").write_text("ok")
    return venv / "bin" / "io"


def _copy_checkout(dest: Path) -> None:
    """The files of this checkout that a `pip install .` reads (no .git, no caches)."""
    import shutil

    ignore = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", ".mypy_cache",
                                    ".ruff_cache", "tests", "bench", "docs", "examples")
    shutil.copytree(REPO, dest, ignore=ignore, dirs_exist_ok=True)


@pytest.fixture
def user_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NO_COLOR"] = "1"
    yield env


def _io(io: Path, args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(io), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def _commands() -> list[tuple[list[str], bool]]:
    """Every command and subcommand of `io` ([name, sub]) and whether it takes a required
    argument; read from the app itself, so a new command is walked too."""
    import typer

    from io_harness_cli.main import build_app

    group = typer.main.get_command(build_app())
    found: list[tuple[list[str], bool]] = []
    commands = getattr(group, "commands", {})
    for name, command in sorted(commands.items()):
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for sub_name, sub in sorted(subcommands.items()):
                found.append(([name, sub_name], any(p.required for p in sub.params)))
        else:
            found.append(([name], any(p.required for p in command.params)))
    return found


NAMED_CASES = [
    (["run"], "no goal"),
    (["tool", "nosuch_tool"], "unknown tool"),
    (["tool", "read_file", "--args", "notjson"], "not valid JSON"),
    (["resume", "0123abcd", "--approve", "--deny"], "exclude each other"),
    (["batch", "missing.jsonl"], "missing.jsonl"),
    (["runs", "--status", "nosuch"], "is not a status"),
    (["run", "goal", "--output-schema", "missing.json"], "--output-schema"),
    (["run", "goal", "--max-steps", "0"], "max-steps"),
    (["trace", "nosuch-run"], "no run"),
    (["spend", "--by"], "see `io spend --help`"),
    (["session", "list", "--status"], "see `io session list --help`"),
    (["resume", "0123abcd", "--approve"], "no run"),
    (["tool", "read_file", "--args", "[]"], "JSON object"),
    (["config", "check", "-c", "missing.toml"], "does not exist"),
    (["doctor", "--bogus"], "see `io doctor --help`"),
]


def _assert_usage_error(result: subprocess.CompletedProcess[str], args: list[str]) -> None:
    text = result.stdout + result.stderr
    assert result.returncode == 2, (args, result.returncode, text)
    assert "Traceback" not in text and "internal error" not in text, (args, text)
    assert "io: error:" in result.stderr or "Usage:" in result.stderr, (args, text)
    if "io: error:" in result.stderr:
        assert "hint:" in result.stderr, (args, text)  # one line naming the fix


def test_the_readme_install_has_no_click_and_io_starts(readme_io: Path, tmp_path: Path,
                                                       user_env: dict[str, str]) -> None:
    python = readme_io.parent / "python"
    probe = subprocess.run([str(python), "-c", "import io_harness_cli, sys; print(io_harness_cli.__file__)"],
                           env=user_env, capture_output=True, text=True, cwd=tmp_path)
    assert probe.returncode == 0 and str(REPO) not in probe.stdout, probe  # the venv's copy
    version = _io(readme_io, ["--version"], tmp_path, user_env)
    assert version.returncode == 0 and version.stdout.startswith("io "), version


@pytest.mark.parametrize(("args", "says"), NAMED_CASES, ids=[" ".join(a) for a, _ in NAMED_CASES])
def test_a_named_usage_error_exits_2_with_one_line(readme_io: Path, tmp_path: Path,
                                                   user_env: dict[str, str], args: list[str],
                                                   says: str) -> None:
    result = _io(readme_io, args, tmp_path, user_env)
    _assert_usage_error(result, args)
    assert says in result.stderr, result.stderr


def test_every_command_with_an_unknown_option_or_a_missing_argument_exits_2(
        readme_io: Path, tmp_path: Path, user_env: dict[str, str]) -> None:
    commands = _commands()
    assert len(commands) >= 20, commands  # the walk really covers the app
    for words, needs_argument in commands:
        _assert_usage_error(_io(readme_io, [*words, "--no-such-option"], tmp_path, user_env),
                            [*words, "--no-such-option"])
        if needs_argument:
            _assert_usage_error(_io(readme_io, words, tmp_path, user_env), words)
    for group in ("config", "session", "store", "templates"):  # a group without a command
        _assert_usage_error(_io(readme_io, [group], tmp_path, user_env), [group])
    _assert_usage_error(_io(readme_io, ["nosuchcommand"], tmp_path, user_env), ["nosuchcommand"])


def test_commands_that_succeed_print_no_python_warning(readme_io: Path, tmp_path: Path,
                                                      user_env: dict[str, str]) -> None:
    """The README's install resolves the newest libraries (pydantic, typer), which the dev
    environment may not have: a library warning there reaches the user's terminal."""
    home = tmp_path / "home"
    env = {**user_env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_STATE_HOME": str(home / "state"), "IO_STORE": str(home / "state.db")}
    assert _io(readme_io, ["config", "init", "--provider", "scripted"], tmp_path,
               env).returncode == 0
    for args in (["config", "schema"], ["config", "check"], ["config", "show"],
                 ["toolchain"], ["doctor"], ["run", "hello"], ["runs"], ["spend"],
                 ["templates", "list"], ["session", "list"], ["store", "check"]):
        result = _io(readme_io, args, tmp_path, env)
        assert result.returncode == 0, (args, result.stderr)
        assert "Warning" not in result.stderr and "Traceback" not in result.stderr, (
            args, result.stderr)


def test_the_readme_s_first_command_runs_the_quickstart(readme_io: Path, tmp_path: Path,
                                                       user_env: dict[str, str]) -> None:
    """`pip install . pytest && io run --workspace examples/quickstart --scratch`, on the
    venv that install made (its own pytest runs the gate): exit 0, the fix in the diff."""
    import shutil

    example = tmp_path / "examples" / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", example)
    home = tmp_path / "home"
    env = {**user_env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_STATE_HOME": str(home / "state"), "IO_STORE": str(home / "state.db"),
           "PATH": f"{readme_io.parent}{os.pathsep}{user_env['PATH']}"}
    result = _io(readme_io, ["run", "--workspace", "examples/quickstart", "--scratch"],
                 tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert "+    return a + b" in result.stderr and "Traceback" not in result.stderr
    assert "Warning" not in result.stderr

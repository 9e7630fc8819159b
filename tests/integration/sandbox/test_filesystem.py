"""The filesystem boundary of the native backend, each with a control that succeeds outside it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness_core.sandbox import Selected

from .conftest import Sandbox

WRITE = """
import errno, sys
try:
    with open(sys.argv[1], "w") as f:
        f.write("planted")
    print("wrote")
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""

READ = """
import errno, sys
try:
    print(open(sys.argv[1]).read())
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""


def test_write_outside_the_workdir_is_refused(
    sandbox: Sandbox, native: Selected, off: Selected, outside: Path
) -> None:
    target = outside / "escaped.txt"
    inside = sandbox.run(native, WRITE, args=[str(target)])
    assert inside.stdout == b"EROFS\n"
    assert not target.exists()

    control = sandbox.run(off, WRITE, args=[str(target)])
    assert control.stdout == b"wrote\n"
    assert target.read_text() == "planted"


def test_write_through_a_symlink_in_the_workdir_is_refused(
    sandbox: Sandbox, native: Selected, off: Selected, outside: Path
) -> None:
    (sandbox.workdir / "link").symlink_to(outside)
    inside = sandbox.run(native, WRITE, args=["link/escaped.txt"])
    assert inside.stdout == b"EROFS\n"
    assert not (outside / "escaped.txt").exists()

    control = sandbox.run(off, WRITE, args=["link/escaped.txt"])
    assert control.stdout == b"wrote\n"
    assert (outside / "escaped.txt").exists()


def test_writes_inside_the_workdir_and_private_tmp_work(sandbox: Sandbox, native: Selected) -> None:
    result = sandbox.run(native, WRITE, args=["inside.txt"])
    assert result.stdout == b"wrote\n"
    assert (sandbox.workdir / "inside.txt").read_text() == "planted"
    assert sandbox.run(native, WRITE, args=["/tmp/scratch.txt"]).stdout == b"wrote\n"


def test_host_tmp_outside_the_workdir_cannot_be_read(
    sandbox: Sandbox, native: Selected, off: Selected, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("hunter2")
    assert sandbox.run(native, READ, args=[str(secret)]).stdout == b"ENOENT\n"
    assert sandbox.run(off, READ, args=[str(secret)]).stdout == b"hunter2\n"


def test_host_run_directory_is_hidden(sandbox: Sandbox, native: Selected, off: Selected) -> None:
    listing = "import os; print(sorted(os.listdir('/run')))"
    inside = sandbox.run(native, listing)
    assert inside.stdout == b"[]\n"
    control = sandbox.run(off, listing)
    assert control.exit_status == 0


PLANT = """
import errno, os, subprocess

def attempt(name, action):
    try:
        action()
        print(name, "ok")
    except OSError as exc:
        print(name, errno.errorcode[exc.errno])

def plant_hook(root):
    os.makedirs(f"{root}/hooks", exist_ok=True)
    with open(f"{root}/hooks/pre-commit", "w") as f:
        f.write("#!/bin/sh\\necho pwned\\n")

attempt("hook", lambda: plant_hook(".git"))
attempt("rename", lambda: os.rename(".git", ".git-moved"))
if os.path.isdir(".git-moved"):
    attempt("hook-after-rename", lambda: (os.makedirs(".git", exist_ok=True), plant_hook(".git")))
attempt("config", lambda: open("io.toml", "w").write("[sandbox]\\nbackend = 'off'\\n"))
attempt("gitmodules", lambda: open(".gitmodules", "w").write("x"))
attempt("gitconfig", lambda: open(".git/config", "a").write("[core]\\nhooksPath = /tmp\\n"))
print("read", open("io.toml").read().strip())
attempt("ordinary", lambda: open("ok.txt", "w").write("fine"))
print("git-add", subprocess.run(["git", "add", "ok.txt"], capture_output=True).returncode)
"""


@pytest.fixture
def repo(sandbox: Sandbox) -> Path:
    subprocess.run(["git", "init", "-q", str(sandbox.workdir)], check=True)
    (sandbox.workdir / "io.toml").write_text("x = 1\n")
    return sandbox.workdir


def protected(root: Path) -> list[Path]:
    return [
        root / "io.toml",
        root / "io.local.toml",
        root / ".git" / "hooks",
        root / ".git" / "config",
        root / ".gitmodules",
    ]


@pytest.mark.parametrize(
    "hooks_exist", [True, False], ids=["hooks-dir-exists", "hooks-dir-missing"]
)
def test_planting_a_git_hook_from_inside_fails(
    sandbox: Sandbox, native: Selected, repo: Path, hooks_exist: bool
) -> None:
    hooks = repo / ".git" / "hooks"
    if not hooks_exist:
        subprocess.run(["rm", "-rf", str(hooks)], check=True)
    config_before = (repo / ".git" / "config").read_text()

    result = sandbox.run(native, PLANT, read_only=protected(repo))
    lines = result.stdout.decode().splitlines()
    assert lines[0] in ("hook EROFS", "hook EEXIST", "hook ENOTDIR", "hook EACCES")
    assert lines[1] == "rename EBUSY"
    assert "config ok" not in lines and "gitmodules ok" not in lines and "gitconfig ok" not in lines
    assert "read x = 1" in lines
    assert "ordinary ok" in lines and "git-add 0" in lines

    assert not (hooks / "pre-commit").exists()
    assert not (repo / ".git-moved").exists()
    assert (repo / "io.toml").read_text() == "x = 1\n"
    assert (repo / ".git" / "config").read_text() == config_before
    # Placeholders for paths that did not exist are gone again.
    assert not (repo / ".gitmodules").exists()
    assert not (repo / "io.local.toml").exists()
    assert hooks.exists() is hooks_exist


def test_planting_a_git_hook_works_without_the_sandbox(
    sandbox: Sandbox, off: Selected, repo: Path
) -> None:
    result = sandbox.run(off, PLANT, read_only=protected(repo))
    assert result.stdout.decode().splitlines()[0] == "hook ok"
    assert (repo / ".git" / "hooks" / "pre-commit").exists()

"""Running git for the git built-ins, confined: no program a file names ever runs.

git runs on the host, outside the command sandbox, so it runs only in a repository that
cannot make it run a program a file names (`open_repository`, checked by
`check_repository` with the rules in `_git_config`) and with every program-naming
setting pinned on its command line (`_PINS`): an empty system and global configuration,
``core.hooksPath`` at an empty directory, no fsmonitor, pager, editor, signing, credential
helper, external diff, automatic gc or transport. Each invocation names the checked git
directory, common directory and work tree, so nothing written after the check redirects
it. The built-ins themselves (`_git_tools`) decide their acts through the gate first;
this module runs git and never decides policy.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from harness_core._record import record
from harness_core.errors import GitRefused, ToolError
from harness_core.host import run_helper
from harness_core.policy import Act, Policy, Tier, Verdict
from harness_core.tools._git import GitSettings
from harness_core.tools._git_config import (
    ConfigEntry,
    check_attributes,
    check_entries,
    include_target,
    parse_config_list,
)

__all__ = ["Repository", "check_repository", "commit_identity", "open_repository", "run_git"]

_PINS: tuple[str, ...] = (
    "core.fsmonitor=false", "core.pager=cat", "core.editor=:", "sequence.editor=:",
    "core.askPass=", "core.sshCommand=", "core.attributesFile=/dev/null",
    "credential.helper=", "diff.external=", "commit.gpgSign=false", "tag.gpgSign=false",
    "log.showSignature=false", "gc.auto=0", "maintenance.auto=false",
    "protocol.allow=never", "submodule.recurse=false", "diff.ignoreSubmodules=dirty",
    "status.submoduleSummary=false", "core.quotePath=false", "color.ui=false",
)
"""Settings every invocation pins on the command line, where they beat any file: no
hook, monitor, pager, editor, signing, credential helper, external diff, automatic gc
or transport runs a program, and submodules are compared by commit only (a submodule's
own status would run git with that submodule's unchecked configuration)."""


@record
class Repository:
    """A repository the git built-ins checked and may run git in.

    Every invocation names the checked git directory, common directory and work tree
    explicitly, so a ``.git`` file, ``commondir`` or ``core.worktree`` written after the
    check is not followed.

    Attributes:
        root: The workspace root (git's working directory).
        git_dir: The git directory (absolute, resolved).
        common_dir: The common directory (the git directory itself outside a linked
            worktree).
        work_tree: The top of the work tree; the workspace lies in it.
        prefix: The workspace's path inside the work tree (``sub/dir/``; ``""`` at the top).
        settings: The `[git]` settings.
        env: The whole environment git runs with.
        pins: The ``-c`` arguments of every invocation.
    """

    root: str
    git_dir: str
    common_dir: str
    work_tree: str
    prefix: str
    settings: GitSettings
    env: Mapping[str, str]
    pins: tuple[str, ...]


def _git_program() -> str:
    found = shutil.which("git")
    if found is None:
        raise ToolError("git is not installed (no `git` on PATH)")
    return found


def _isolated_env(git: str, home: str) -> dict[str, str]:
    """No system or global configuration, no attributes file, no prompt, C messages."""
    env = {
        "PATH": f"{os.path.dirname(git)}{os.pathsep}{os.defpath}", "HOME": home,
        "XDG_CONFIG_HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_SYSTEM": os.devnull,
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_ATTR_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1", "GIT_PROTOCOL_FROM_USER": "0", "LC_ALL": "C",
    }
    zone = os.environ.get("TZ")  # the operator's zone for commit dates, nothing else
    if zone is not None:
        env["TZ"] = zone
    return env


def _invoke(argv: list[str], cwd: str, env: Mapping[str, str] | None,
            timeout: float) -> subprocess.CompletedProcess[bytes]:
    try:
        # The one host process that starts in the workspace: every setting that could
        # name a program is refused first (module docstring), so git runs nothing of the
        # agent's; harness_core.host keeps the call with its siblings.
        return run_helper(argv, cwd=Path(cwd), env=env, timeout=timeout)
    except FileNotFoundError as exc:
        raise ToolError("git is not installed (no `git` on PATH)") from exc
    except subprocess.TimeoutExpired as exc:
        sub = next((a for a in argv[1:] if not a.startswith("-") and "=" not in a), "git")
        raise ToolError(f"git {sub} timed out after {timeout:g}s") from exc


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    return (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-2000:]


def _discover(root: str, git: str, env: Mapping[str, str],
              settings: GitSettings) -> tuple[str, str, str, str]:
    """(git dir, common dir, work tree, prefix) as git finds them from `root`."""
    done = _invoke([git, "-c", "core.fsmonitor=false", "rev-parse", "--path-format=absolute",
                    "--absolute-git-dir", "--git-common-dir", "--show-toplevel",
                    "--show-prefix"], root, env, settings.timeout_seconds)
    said = _said(done)
    if done.returncode != 0:
        if "not a git repository" in said:
            raise ToolError("the workspace is not a git repository (run `git init` first)")
        raise ToolError(f"git rev-parse failed (exit {done.returncode}): {said}")
    lines = done.stdout.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) != 5 or lines[4]:
        raise ToolError("git named its directories in a way io cannot read (a newline in"
                        " a path?)")
    git_dir, common, top, prefix = lines[:4]
    return (os.path.realpath(git_dir), os.path.realpath(common), os.path.realpath(top),
            prefix)


@contextlib.contextmanager
def open_repository(root: str, settings: GitSettings) -> Iterator[Repository]:
    """Find and check the repository the workspace `root` is in.

    Args:
        root: The workspace root.
        settings: The `[git]` settings (timeout).

    Yields:
        The checked repository, valid inside the ``with`` block.

    Raises:
        GitRefused: A file git would read names a program, or the agent could write
            git's configuration (see `_git_config`).
        ToolError: git is not installed, timed out, or the workspace is not in a
            repository.
    """
    git = _git_program()
    with tempfile.TemporaryDirectory(prefix="io-git-") as home:
        env = _isolated_env(git, home)
        git_dir, common, top, prefix = _discover(root, git, env, settings)
        env.update(GIT_DIR=git_dir, GIT_COMMON_DIR=common, GIT_WORK_TREE=top)
        pins = (f"core.hooksPath={home}", *_PINS)
        repo = Repository(root, git_dir, common, top, prefix, settings, env,
                          tuple(arg for pin in pins for arg in ("-c", pin)))
        check_repository(repo, git)
        yield repo


def run_git(repo: Repository, args: list[str], *, check: bool = True,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` in the checked repository, every program-naming setting pinned.

    Args:
        repo: From `open_repository`.
        args: The git subcommand and its arguments.
        check: Raise `ToolError` when git exits non-zero.
        env: Variables added to the repository's environment (the commit identity).

    Raises:
        ToolError: git timed out, or (with `check`) failed; the message carries git's
            own words.
    """
    full = {**repo.env, **(env or {})}
    done = _invoke([_git_program(), *repo.pins, *args], repo.root, full,
                   repo.settings.timeout_seconds)
    if check and done.returncode != 0:
        raise ToolError(f"git {args[0]} failed (exit {done.returncode}): {_said(done)}")
    return done


_IDENT = re.compile(r"^(.*) <([^<>]*)> \d+ [+-]\d{4}$")


def commit_identity(repo: Repository) -> dict[str, str]:
    """The author and committer, as environment variables for `run_git`.

    `[git]` settings win; a part they leave unset comes from the operator's own git
    (their environment, the repository's and their global configuration), asked with
    ``git var``, which reads configuration and runs nothing.

    Raises:
        ToolError: Neither `[git]` nor the operator's git has an identity.
    """
    settings = repo.settings
    out: dict[str, str] = {}
    for role in ("AUTHOR", "COMMITTER"):
        name, email = settings.author_name, settings.author_email
        if name is None or email is None:
            done = _invoke([_git_program(), "var", f"GIT_{role}_IDENT"], repo.root, None,
                           settings.timeout_seconds)
            found = _IDENT.match(done.stdout.decode("utf-8", "surrogateescape").strip())
            if done.returncode != 0 or found is None:
                raise ToolError(f"git has no identity to commit with: {_said(done)}"
                                " (set [git] author = \"Name <email>\" in io.toml)")
            name = found.group(1) if name is None else name
            email = found.group(2) if email is None else email
        out[f"GIT_{role}_NAME"], out[f"GIT_{role}_EMAIL"] = name, email
    return out


_BUILTIN = Policy(tier=Tier.FULL)


def _is_protected(rel: str) -> bool:
    """Whether the built-in layer keeps every tool and command from writing `rel`."""
    return _BUILTIN.check(Act.write(rel)).verdict is Verdict.DENY


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def _check_directories(repo: Repository, root: Path) -> None:
    """A git directory in the workspace is ``.git`` itself, and it redirects nowhere."""
    if _relative(Path(repo.git_dir), root) is not None:
        redirect = Path(repo.git_dir, "commondir")
        if os.path.lexists(redirect):
            raise GitRefused(".git/commondir", str(redirect),
                             ".git/commondir exists: it would make git read its"
                             " configuration from another directory; a repository's own"
                             " .git has none, and io will not follow one in the workspace"
                             " (remove it)")
    dot_git = Path(os.path.realpath(root / ".git"))
    for key, found in (("gitdir", repo.git_dir), ("commondir", repo.common_dir)):
        rel = _relative(Path(found), root)
        if rel is not None and Path(found) != dot_git:
            raise GitRefused(key, found, f"the repository's git directory is {rel}, inside"
                             " the workspace but not .git: the agent can write its"
                             " configuration and hooks")


def _attribute_files(repo: Repository, git: str) -> list[Path]:
    """Every attribute file git may read for the workspace's paths."""
    files = [Path(repo.git_dir, "info", "attributes"), Path(repo.common_dir, "info", "attributes")]
    here = Path(repo.work_tree)
    files.append(here / ".gitattributes")
    for part in Path(repo.prefix).parts:
        here = here / part
        files.append(here / ".gitattributes")
    listed = _invoke([git, *repo.pins, "ls-files", "-z", "--cached", "--others",
                      "--exclude-standard", "--", ":(glob)**/.gitattributes"], repo.root,
                     repo.env, repo.settings.timeout_seconds)
    if listed.returncode != 0:
        raise ToolError(f"git ls-files failed (exit {listed.returncode}): {_said(listed)}")
    files += [Path(repo.root, os.fsdecode(raw)) for raw in listed.stdout.split(b"\0") if raw]
    return list(dict.fromkeys(files))


def check_repository(repo: Repository, git: str) -> None:
    """Refuse a repository in which git could run a program a file names.

    Every file an include names is read as well, whatever its condition says now.

    Raises:
        GitRefused: See `_git_config`; also a git directory inside the workspace other
            than ``.git``, and a ``.git/commondir``.
        ToolError: git could not list the configuration.
    """
    root = Path(os.path.realpath(repo.root))
    _check_directories(repo, root)
    home = repo.env["HOME"]
    entries = _config_list(repo, git, [])
    read = {os.path.realpath(e.origin.partition(":")[2]) for e in entries}
    pending = [entries]
    while pending:
        batch = pending.pop()
        check_entries(batch, root, _is_protected, home)
        # A conditional include git skips now (``onbranch:``) may be taken when git
        # reads again: every file an include names is checked, whatever its condition.
        for entry in batch:
            target = include_target(entry, home)
            if target is not None and str(target) not in read and target.is_file():
                read.add(str(target))
                pending.append(_config_list(repo, git, ["--file", str(target)]))
    check_attributes(_attribute_files(repo, git))


def _config_list(repo: Repository, git: str, source: list[str]) -> list[ConfigEntry]:
    """``git config --list`` of the repository (or of one file), includes followed."""
    listed = _invoke([git, "config", *source, "--list", "--show-origin", "--includes", "-z"],
                     repo.root, repo.env, repo.settings.timeout_seconds)
    if listed.returncode != 0:
        raise ToolError(f"git config failed (exit {listed.returncode}): {_said(listed)}")
    return parse_config_list(listed.stdout)

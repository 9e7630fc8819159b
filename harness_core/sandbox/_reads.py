"""Read confinement: what a sandboxed command may read, as mounts for one sandbox start.

The native backend shows the host's `/` read-only; this module works out what to take
away from that view before any command runs:

- The user's home directory (``HOME`` and the password database's home) is replaced by
  an empty tmpfs. What a toolchain needs is bound back read-only: the venv and the
  interpreter `io` runs on, every ``PATH`` entry under the home (a venv's whole root, or
  the known toolchain directory it lies in), the known toolchain directories that exist
  (`TOOLCHAIN_DIRS`), and the operator's `[sandbox] read_paths`.
- The well-known secret stores (`SECRET_STORES`) and the io store are masked wherever
  they would still be visible (an empty read-only tmpfs over a directory, an empty
  read-only file over a file).
- Every path the run's policy refuses to read (`SandboxSpec.masked`, evaluated before
  each command, so a file the agent created since is covered too) is masked the same way.

The homes and the paths bound back are worked out once per environment in a process (a
toolchain installed on the host during a run shows at the next `io`); the secret stores
and the masks are looked at again before every command. Pure except for `stat` calls
on the host; the mounts themselves are `bwrap` arguments.
"""

from __future__ import annotations

import functools
import os
import pwd
import stat
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness_core._record import record
from harness_core.errors import SandboxUnavailable

__all__ = ["SECRET_STORES", "TOOLCHAIN_DIRS", "ReadPlan", "empty_file", "plan_reads"]

SECRET_STORES: tuple[str, ...] = (
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".local/share/io",
    ".local/state/io",
)
"""Paths under the home directory hidden from every sandboxed command (the last two are
where the io store lives by default)."""

TOOLCHAIN_DIRS: tuple[str, ...] = (
    ".cargo",
    ".rustup",
    ".npm",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".pyenv",
    ".rbenv",
    ".gem",
    ".local/bin",
    ".local/lib",
    ".local/pipx",
    ".cache/pip",
    ".m2",
    ".gradle",
    ".sdkman",
    ".elan",
    ".ghcup",
    ".opam",
    ".nix-profile",
    "go",
)
"""Directories under the home directory bound back read-only when they exist."""


@record
class ReadPlan:
    """The read-confinement mounts of one sandbox start.

    Attributes:
        hidden_homes: Home directories replaced by an empty tmpfs.
        exposed: Paths under a hidden home bound back read-only (parents first).
        mask_dirs: Directories covered by an empty read-only tmpfs.
        mask_files: Files covered by an empty read-only file.
    """

    hidden_homes: tuple[Path, ...] = ()
    exposed: tuple[Path, ...] = ()
    mask_dirs: tuple[Path, ...] = ()
    mask_files: tuple[Path, ...] = ()


def _homes(env: Mapping[str, str]) -> list[Path]:
    found: list[Path] = []
    candidates = [env.get("HOME", "")]
    try:
        candidates.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    for value in candidates:
        if not value or not os.path.isabs(value):
            continue
        home = Path(os.path.realpath(value))
        if home != Path("/") and home.is_dir() and home not in found:
            found.append(home)
    return found


def _under(path: Path, roots: Iterable[Path]) -> Path | None:
    for root in roots:
        if path == root or path.is_relative_to(root):
            return root
    return None


def _toolchain_root(entry: Path, home: Path) -> Path:
    """What to expose for a PATH entry under `home`: its venv, its toolchain dir, or itself."""
    if (entry.parent / "pyvenv.cfg").is_file():
        return entry.parent
    for name in TOOLCHAIN_DIRS:
        root = home / name
        if entry == root or entry.is_relative_to(root):
            return root
    return entry


def _exposed(
    env: Mapping[str, str], homes: list[Path], read_paths: Iterable[Path]
) -> tuple[Path, ...]:
    wanted: set[Path] = set()
    for home in homes:
        wanted.update(home / name for name in TOOLCHAIN_DIRS)
    entries = [Path(p) for p in env.get("PATH", "").split(os.pathsep) if os.path.isabs(p)]
    for value in (env.get("VIRTUAL_ENV") or None, sys.prefix, sys.base_prefix):
        if value:
            entries.append(Path(value) / "bin")
    for entry in entries:
        real = Path(os.path.realpath(entry))
        owner = _under(real, homes)
        if owner is not None and real != owner:
            wanted.add(_toolchain_root(real, owner))
    wanted.update(Path(os.path.realpath(p)) for p in read_paths)
    kept = [p for p in wanted if os.path.lexists(p)]
    return tuple(sorted(kept, key=lambda p: (len(p.parts), str(p))))


def _split(paths: Iterable[Path], keep: Iterable[Path]) -> tuple[list[Path], list[Path]]:
    """The directories and the files among `paths` (a missing path has nothing to hide).

    A path io cannot look at (a directory above it readable but not searchable: its name
    was listed, its type cannot be read) is not taken as missing: a command running as
    that directory's owner could make it searchable again. The nearest directory above
    it that io can see is masked whole instead; when that is one of `keep` (the
    workspace, a home) or `/`, the command cannot be confined and does not start.

    Raises:
        SandboxUnavailable: Nothing short of `keep` or `/` can cover such a path.
    """
    dirs: list[Path] = []
    files: list[Path] = []
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):  # missing: nothing to hide
            continue
        except OSError as exc:
            dirs.append(_cover(path, exc, keep))
            continue
        if stat.S_ISLNK(mode):
            continue
        (dirs if stat.S_ISDIR(mode) else files).append(path)
    return dirs, files


def _cover(path: Path, exc: OSError, keep: Iterable[Path]) -> Path:
    """The nearest directory above `path` that io can see, to be masked whole."""
    kept = {Path(os.path.realpath(k)) for k in keep} | {Path("/")}
    for parent in path.parents:
        try:
            visible = stat.S_ISDIR(os.lstat(parent).st_mode)
        except OSError:
            continue
        if visible and parent not in kept:
            return parent
        break
    raise SandboxUnavailable(
        f"cannot look at {path} to hide it ({exc.strerror or exc}), and nothing above it"
        " can be hidden instead; give io search permission on its folders")


@functools.lru_cache(maxsize=16)
def _static(
    home: str, path: str, venv: str, read_paths: tuple[Path, ...]
) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """The homes to hide and what to bind back: worked out once per environment."""
    env = {"HOME": home, "PATH": path, "VIRTUAL_ENV": venv}
    homes = _homes(env)
    return tuple(homes), _exposed(env, homes, read_paths)


def _needs_mask(path: Path, homes: Iterable[Path], visible: Iterable[Path]) -> bool:
    """A path under a hidden home is already out of sight (the home is an empty tmpfs)
    unless something bound back brings it back; masking it would make bwrap create its
    mount point on a read-only tmpfs, which fails every command (the default store,
    ~/.local/state/io/state.db, lies there)."""
    return not _inside_any(path, homes) or _inside_any(path, visible)


@functools.lru_cache(maxsize=16)
def _maskable(
    homes: tuple[Path, ...], visible: tuple[Path, ...], hidden: tuple[Path, ...]
) -> tuple[Path, ...]:
    """The secret stores and hidden paths that may need a mask (whether they exist is
    looked at each time)."""
    stores = [home / name for home in homes for name in SECRET_STORES]
    return tuple(p for p in (*stores, *hidden) if _needs_mask(p, homes, visible))


def plan_reads(
    env: Mapping[str, str],
    *,
    read_paths: Iterable[Path] = (),
    hidden: Iterable[Path] = (),
    masked: Iterable[Path] = (),
    workdir: Path | None = None,
) -> ReadPlan:
    """Decide the read-confinement mounts for one sandbox start.

    Args:
        env: The command's environment before the scrub (HOME, PATH, VIRTUAL_ENV).
        read_paths: Extra host paths to keep visible (`[sandbox] read_paths`).
        hidden: Further host paths to mask (the io store and its siblings).
        masked: Paths the policy refuses to read (already expanded).
        workdir: The writable root, bound after the homes are hidden (it brings back
            what lies in it, so that is masked too).

    Returns:
        The plan; paths that do not exist are left out (nothing to hide).
    """
    homes, exposed = _static(
        env.get("HOME", ""), env.get("PATH", ""), env.get("VIRTUAL_ENV", ""), tuple(read_paths)
    )
    visible = (*exposed, *([Path(os.path.realpath(workdir))] if workdir else []))
    needed = [*_maskable(homes, visible, tuple(hidden)),
              *(p for p in masked if _needs_mask(p, homes, visible))]
    dirs, files = _split(needed, (*homes, *([workdir] if workdir else [])))
    # Nothing inside a masked directory needs (or could get) a mask of its own.
    dirs = [d for d in set(dirs) if not _inside_any(d, [o for o in dirs if o != d])]
    files = [f for f in set(files) if not _inside_any(f, dirs)]
    order = lambda p: (len(p.parts), str(p))  # noqa: E731
    return ReadPlan(
        hidden_homes=homes,
        exposed=exposed,
        mask_dirs=tuple(sorted(dirs, key=order)),
        mask_files=tuple(sorted(files, key=order)),
    )


def _inside_any(path: Path, roots: Iterable[Path]) -> bool:
    """Whether `path` is one of `roots` or lies below one (by string: no stat, no Path
    objects per parent; this runs for every mask at every command)."""
    text = str(path)
    for root in roots:
        base = str(root)
        if text == base or text.startswith(base if base.endswith("/") else base + "/"):
            return True
    return False


_empty: Path | None = None
_empty_lock = threading.Lock()


def empty_file() -> Path:
    """An empty read-only host file to bind over masked files (made once per process)."""
    global _empty
    with _empty_lock:
        if _empty is None or not _empty.is_file():
            folder = Path(tempfile.mkdtemp(prefix="io-mask-"))
            path = folder / "empty"
            path.touch(mode=0o444)
            _empty = path
        return _empty

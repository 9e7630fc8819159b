"""Files io writes for the operator on the host: reports, the last message, the HTML trace.

Such a file may be asked for inside the workspace (docs/guide/ci.md writes `answer.txt`
and `io-gates.xml` there), where the agent could have planted a symbolic link, a hard
link or a FIFO at the name, or a link in place of a folder on the way. So the path is
walked from `/` one component at a time, each folder opened without following links:

- a symbolic link that lies inside the workspace (a folder on the way, or the file
  itself) is refused, since the agent could have put it there; one outside the
  workspace is the operator's and is followed (at most 40 of them);
- the file itself must be a regular file with no other hard link when it lies inside
  the workspace, and a regular file anywhere (a FIFO would hang the write);
- the data goes to a new file beside the target that is then renamed over it, so a
  link planted at the name after the check is replaced, never written through; the
  process ledger names that file while it exists, so the next `io` removes one that a
  `kill -9` mid-write left.

Appending (`$GITHUB_STEP_SUMMARY`) opens the file itself with `O_NOFOLLOW` after the
same walk. Nothing here follows a link the agent could plant.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from harness_core.errors import HostBoundaryError
from harness_core.sandbox._ledger import current_ledger

__all__ = ["write_operator_file"]

_MAX_LINKS = 40
"""Symbolic links outside the workspace followed before giving up (Linux's own limit)."""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def write_operator_file(path: Path, data: bytes, *, workspace: Path | None,
                        append: bool = False, exclusive: bool = False) -> Path:
    """Write `data` to `path` for the operator, never through a link the agent planted.

    Args:
        path: Where the operator asked for the file (relative to the current folder).
        data: The whole content (or what to append).
        workspace: The run's workspace root, whose links are never followed; None when
            the command has no workspace (every link is then the operator's).
        append: Append to the file (created when missing) instead of replacing it.
        exclusive: Refuse when anything already stands at the path (`io config init`).

    Returns:
        The path written (with links outside the workspace resolved).

    Raises:
        HostBoundaryError: A link, hard link or special file inside the workspace where
            the file goes, a special file anywhere, or a path that cannot be written
            (the message names the path and why).
    """
    roots = _roots(workspace)
    target = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        folder_fd, folder, name = _open_folder(target, roots, shown=str(path))
        try:
            inside = _is_inside(folder, roots)
            try:
                info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
            except FileNotFoundError:
                info = None
            except OSError as exc:
                raise _refused(path, exc.strerror or str(exc)) from None
            if info is not None and stat.S_ISLNK(info.st_mode):
                if inside:
                    raise _refused(path, "it is a symbolic link inside the workspace, which the"
                                         " agent could have planted")
                link = os.readlink(name, dir_fd=folder_fd)
                target = os.path.normpath(os.path.join(folder, link))
                continue
            if info is not None:
                _check_existing(path, info, inside=inside, exclusive=exclusive)
            _write(folder_fd, name, data, append=append, exclusive=exclusive, shown=path,
                   folder=folder)
            return Path(folder) / name
        finally:
            os.close(folder_fd)
    raise _refused(path, f"more than {_MAX_LINKS} symbolic links on the way")


def _roots(workspace: Path | None) -> tuple[str, ...]:
    if workspace is None:
        return ()
    return tuple(dict.fromkeys((os.path.abspath(workspace), os.path.realpath(workspace))))


def _is_inside(folder: str, roots: tuple[str, ...]) -> bool:
    return any(folder == root or folder.startswith(root.rstrip(os.sep) + os.sep)
               for root in roots)


def _open_folder(target: str, roots: tuple[str, ...], *, shown: str) -> tuple[int, str, str]:
    """Open the folder `target` lies in, component by component, never following a link
    inside the workspace: (its fd, its real path, the file's name)."""
    for _ in range(_MAX_LINKS):
        head, name = os.path.split(target)
        if not name:
            raise _refused(Path(shown), "it names a folder, not a file")
        parts = [p for p in head.split(os.sep) if p]
        fd = os.open(os.sep, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        real = os.sep
        restart: str | None = None
        try:
            for index, part in enumerate(parts):
                try:
                    info = os.stat(part, dir_fd=fd, follow_symlinks=False)
                except OSError as exc:
                    raise _refused(Path(shown), f"{os.path.join(real, part)}: "
                                   f"{exc.strerror or exc}") from None
                if stat.S_ISLNK(info.st_mode):
                    if _is_inside(real, roots):
                        raise _refused(Path(shown), f"{os.path.join(real, part)} is a symbolic"
                                       " link inside the workspace, which the agent could have"
                                       " planted")
                    link = os.readlink(part, dir_fd=fd)
                    restart = os.path.normpath(os.path.join(real, link, *parts[index + 1:], name))
                    break
                if not stat.S_ISDIR(info.st_mode):
                    raise _refused(Path(shown), f"{os.path.join(real, part)} is not a folder")
                try:
                    child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC,
                                    dir_fd=fd)
                except OSError as exc:  # swapped for a link since the stat: refuse
                    raise _refused(Path(shown), f"{os.path.join(real, part)}: "
                                   f"{exc.strerror or exc}") from None
                os.close(fd)
                fd = child
                real = os.path.join(real, part)
        except BaseException:
            os.close(fd)
            raise
        if restart is None:
            return fd, real, name
        os.close(fd)
        target = restart
    raise _refused(Path(shown), f"more than {_MAX_LINKS} symbolic links on the way")


def _check_existing(path: Path, info: os.stat_result, *, inside: bool, exclusive: bool) -> None:
    if exclusive:
        raise _refused(path, "it already exists; io never overwrites it", exists=True)
    if not stat.S_ISREG(info.st_mode):
        raise _refused(path, "it is not a regular file (a folder, FIFO, device or socket)")
    if inside and info.st_nlink > 1:
        raise _refused(path, "it has another hard link inside the workspace, which the agent"
                             " could have planted")


def _write(folder_fd: int, name: str, data: bytes, *, append: bool, exclusive: bool,
           shown: Path, folder: str) -> None:
    try:
        if append or exclusive:
            flags = os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _CLOEXEC | (
                os.O_APPEND if append else os.O_EXCL)
            fd = os.open(name, flags | getattr(os, "O_NONBLOCK", 0), 0o644, dir_fd=folder_fd)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise _refused(shown, "it is not a regular file")
                _write_all(fd, data)
            finally:
                os.close(fd)
            return
        temp = f".io-{secrets.token_hex(8)}.tmp"  # the name a workspace write's has
        ledger = current_ledger()  # names it while it exists (`kill -9` mid-write)
        if ledger is not None:
            ledger.note_temporary(Path(folder), temp)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
                         0o644, dir_fd=folder_fd)
            try:
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
                os.replace(temp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=folder_fd)
                raise
        finally:
            if ledger is not None:
                ledger.forget_temporary(Path(folder), temp)
    except FileExistsError:
        raise _refused(shown, "it already exists; io never overwrites it", exists=True) from None
    except OSError as exc:
        raise _refused(shown, exc.strerror or str(exc)) from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _refused(path: Path, why: str, *, exists: bool = False) -> HostBoundaryError:
    return HostBoundaryError(f"cannot write {str(path)!r}: {why}", exists=exists)

"""The workspace: its root, the one path resolver, and file I/O that cannot leave the root.

Every path any tool touches goes through `Workspace.resolve`, which turns it into a
normalised posix path relative to the root or raises `PathEscape`. It follows ``..``
and symbolic links component by component, so ``..`` above the root, an absolute path
outside it, a sibling that merely shares a string prefix (``/w/proj-evil`` next to
``/w/proj``), a link pointing out (``/proc/self/root/...`` included) and a link loop
are all refused. A link inside the root that stays inside is followed, and the real
path is returned: every operation then acts on that real path, which is also the path
the policy is asked about, so what was checked is what is touched.

Resolving is a check, and a check can go stale: a command may swap a directory for a
link between the check and the use. So the I/O never reopens the resolved path by
name from ``/``. It opens the root, then each directory below it relative to the
previous one with ``O_DIRECTORY | O_NOFOLLOW``, and the final file with ``O_NOFOLLOW``;
a write goes to a fresh temporary file in the same directory which is then renamed
over the target relative to that directory's descriptor. A link planted anywhere on
the way makes the operation fail with `WorkspaceError`; it is never followed out.
A rename also replaces a hard link rather than writing through it.

On a platform without ``dir_fd`` support (Windows) the same steps run on path strings
with an ``lstat`` before each step: the escapes above are still refused, but a link
swapped in between the check and the use is not defended against there.

This module never decides policy: what may be read or written is `harness_core.policy`'s
business. Every `OSError` is translated to `WorkspaceError` here, at the boundary.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness_core._held_files import REFUSAL, held
from harness_core._record import record
from harness_core.errors import PathEscape, WorkspaceError
from harness_core.messages import escape_surrogates

__all__ = ["DirEntry", "Workspace"]

_USE_DIR_FD = {os.open, os.stat, os.mkdir, os.rename, os.unlink} <= os.supports_dir_fd and (
    os.scandir in os.supports_fd
)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_MAX_LINKS = 40
"""Symbolic links followed while resolving one path (Linux's own limit is 40)."""
_SKIPPED_DIR = ".git"
_WINDOWS = os.sep == "\\"
_S_IFMT, _S_IFLNK, _S_IFDIR = 0o170000, stat.S_IFLNK, stat.S_IFDIR
_GONE = -1
"""`_kind` of an entry that does not exist (nor can anything below it)."""
_UNREADABLE = -2
"""`_kind` of an entry that cannot be inspected: kept as written; the I/O decides."""
_PASSABLE = frozenset({_S_IFDIR, _S_IFLNK, _UNREADABLE})
"""Kinds below which an entry may exist (a link whose target could not be read has
become something else meanwhile, and is treated as what it now is)."""


@record
class DirEntry:
    """One entry of a directory listing; links are described, never followed.

    Attributes:
        name: The entry's name.
        is_dir: It is a directory (not a link to one).
        is_symlink: It is a symbolic link.
        size: Its size in bytes (a link's own size for a link).
    """

    name: str
    is_dir: bool
    is_symlink: bool
    size: int


class _Dir:
    """A directory inside the root, held by descriptor (or by path without dir_fd)."""

    def __init__(self, fd: int | None, path: str) -> None:
        self.fd = fd
        self.path = path

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _join(self, name: str) -> str:
        return os.path.join(self.path, name)

    def _refuse_link(self, name: str) -> None:
        # Only without dir_fd support: a check that may go stale, stated in the docstring.
        if stat.S_ISLNK(os.lstat(self._join(name)).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), self._join(name))

    def child(self, name: str, *, create: bool) -> _Dir:
        try:
            return self._open_child(name)
        except FileNotFoundError:
            if not create:
                raise
        try:
            self.mkdir(name)
        except FileExistsError:
            pass  # made by someone else meanwhile; opening it below checks what it is
        return self._open_child(name)

    def _open_child(self, name: str) -> _Dir:
        if self.fd is not None:
            flags = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
            try:
                return _Dir(os.open(name, flags, dir_fd=self.fd), self._join(name))
            except NotADirectoryError:
                # Linux reports a link met with O_DIRECTORY|O_NOFOLLOW as ENOTDIR; say which.
                if stat.S_ISLNK(self.lstat(name).st_mode):
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
                raise
        self._refuse_link(name)
        if not os.path.isdir(self._join(name)):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), self._join(name))
        return _Dir(None, self._join(name))

    def open(self, name: str, flags: int, mode: int = 0o666) -> int:
        flags |= _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
        self._refuse_held_store(name)
        if self.fd is not None:
            return os.open(name, flags, mode, dir_fd=self.fd)
        if not flags & os.O_CREAT:
            self._refuse_link(name)
        return os.open(self._join(name), flags, mode)

    def _refuse_held_store(self, name: str) -> None:
        # Closing the descriptor would drop the locks of io's own connection to a store
        # kept in the workspace (`harness_core._held_files`): refused before opening.
        if held(name, self.lstat):
            raise OSError(errno.EBUSY, REFUSAL, self._join(name))

    def lstat(self, name: str) -> os.stat_result:
        if self.fd is not None:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        return os.lstat(self._join(name))

    def mkdir(self, name: str) -> None:
        if self.fd is not None:
            os.mkdir(name, 0o777, dir_fd=self.fd)
        else:
            os.mkdir(self._join(name), 0o777)

    def unlink(self, name: str) -> None:
        if self.fd is not None:
            os.unlink(name, dir_fd=self.fd)
        else:
            os.unlink(self._join(name))

    def replace(self, source: str, target: str) -> None:
        if self.fd is not None:
            os.replace(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        else:
            os.replace(self._join(source), self._join(target))

    def entries(self) -> list[tuple[str, os.stat_result]]:
        """(name, lstat) of every entry, sorted by name; entries that vanish are left out."""
        out: list[tuple[str, os.stat_result]] = []
        with os.scandir(self.fd if self.fd is not None else self.path) as it:
            for entry in it:
                try:
                    out.append((entry.name, entry.stat(follow_symlinks=False)))
                except FileNotFoundError:
                    continue
        out.sort(key=lambda item: item[0])
        return out

    def sync(self) -> None:
        if self.fd is not None:
            try:
                os.fsync(self.fd)
            except OSError:
                pass  # some filesystems refuse fsync on a directory; the rename still happened


_MESSAGES = {
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "a component of the path is not a directory",
    errno.EISDIR: "is a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ELOOP: "a symbolic link is in the way (the workspace does not follow links here)",
    errno.EEXIST: "already exists",
    errno.ENOTEMPTY: "directory is not empty",
    errno.ENOSPC: "no space left on device",
    errno.EFBIG: "file too large",
}


@contextmanager
def _translated(action: str, rel: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        detail = _MESSAGES.get(exc.errno or 0, exc.strerror or str(exc))
        raise WorkspaceError(f"cannot {action} {rel or '.'!r}: {detail}") from exc


class Workspace:
    """The workspace root and the only way `io` touches files under it.

    Args:
        root: An existing directory; kept as its real path (links resolved).

    Raises:
        WorkspaceError: `root` is not an existing directory.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        given = os.path.abspath(os.fspath(root))
        if not os.path.isdir(given):
            raise WorkspaceError(f"workspace {given!r} is not an existing directory")
        self._root = Path(os.path.realpath(given))
        self._root_slash = str(self._root).rstrip(os.sep) + os.sep
        self._prefixes = _unique_parts(str(self._root), given)
        self._use_dir_fd = _USE_DIR_FD

    def __repr__(self) -> str:
        return f"Workspace({str(self._root)!r})"

    @property
    def root(self) -> Path:
        """The root directory's real path."""
        return self._root

    # -- resolution -------------------------------------------------------------------

    def resolve(
        self, path: str, *, cwd: str = "", _kinds: dict[str, int] | None = None
    ) -> str:
        """Turn `path` into a normalised posix path relative to the root.

        Args:
            path: Relative (to `cwd`) or absolute (must lie under the root).
            cwd: Directory `path` is relative to, itself relative to the root.
            _kinds: Private. A dict the caller owns for the span of one check of
                several paths (one command line), remembering what each location
                was found to be, so a directory shared by those paths is inspected
                once. The caller must drop it when that check ends: it is a snapshot,
                never to be kept across checks.

        Returns:
            The real relative path, ``""`` for the root itself. Links inside the root
            are followed; components that do not exist yet are kept as written.

        Raises:
            PathEscape: The path leaves the root, by ``..``, an absolute path or a link.
            WorkspaceError: The path holds a NUL byte or too many links.
        """
        if "\0" in path or "\0" in cwd:
            raise WorkspaceError(f"path {escape_surrogates(path)!r} contains a NUL byte")
        _check_encodable(path)
        _check_encodable(cwd)
        if _WINDOWS:
            path, cwd = path.replace("\\", "/"), cwd.replace("\\", "/")
        if path.startswith("/") or (_WINDOWS and os.path.isabs(path)):
            parts = self._inside(path, path)
        elif not cwd:
            parts = path.split("/")
        else:
            base = self._inside(cwd, path) if _is_absolute(cwd) else cwd.split("/")
            parts = base + path.split("/")
        return self._follow(parts, path, _kinds)

    def _inside(self, absolute: str, original: str) -> list[str]:
        parts = _split_absolute(absolute)
        for prefix in self._prefixes:
            if _has_prefix(parts, prefix):
                return parts[len(prefix) :]
        raise PathEscape(original, "is an absolute path outside the workspace root")

    def _follow(self, parts: list[str], original: str, kinds: dict[str, int] | None) -> str:
        # One lstat per component, on a path string built as the walk goes. Below a
        # component that is missing or not a directory nothing can exist, so the rest
        # is kept as written without asking the filesystem again (until a `..` climbs
        # back above it). Nothing is remembered between calls, except in `kinds` when
        # the caller passes one (see `resolve`).
        pending = parts[::-1]
        resolved: list[str] = []
        where: list[str] = []  # where[i]: the absolute location of resolved[: i + 1]
        dead = -1  # index in `resolved` of a component that is missing or not a directory
        links: list[str] = []  # the links followed so far
        while pending:
            name = pending.pop()
            if name == "" or name == ".":
                continue
            if name == "..":
                if not resolved:
                    raise PathEscape(original, *([_through(links[-1])] if links else []))
                resolved.pop()
                where.pop()
                dead = -1 if dead >= len(resolved) else dead
                continue
            location = (where[-1] + "/" if where else self._root_slash) + name
            if dead >= 0:
                kind = _GONE
            elif kinds is None:
                kind = _kind(location)
            else:
                found = kinds.get(location)
                if found is None:
                    found = kinds[location] = _kind(location)
                kind = found
            target = _readlink(location) if kind == _S_IFLNK else None
            if target is not None:
                links.append("/".join([*resolved, name]))
                if _is_absolute(target):
                    resolved, where = [], []
                pending.extend(reversed(self._link_parts(target, links, original)))
                continue
            if dead < 0 and kind not in _PASSABLE:
                dead = len(resolved)
            resolved.append(name)
            where.append(location)
        return "/".join(resolved)

    def _link_parts(self, target: str, links: list[str], original: str) -> list[str]:
        """The components a link's target splices into the walk."""
        if len(links) > _MAX_LINKS:
            raise WorkspaceError(f"path {original!r} goes through too many symbolic links")
        if not _is_absolute(target):
            return target.replace(os.sep, "/").split("/")
        try:
            return self._inside(target, original)
        except PathEscape:
            raise PathEscape(original, _through(links[-1])) from None

    def abspath(self, rel: str) -> Path:
        """The absolute path of `rel` (resolved first, so it cannot escape).

        Raises:
            PathEscape: `rel` leaves the root.
        """
        resolved = self.resolve(rel)
        return self._root.joinpath(*resolved.split("/")) if resolved else self._root

    # -- descriptor walking -----------------------------------------------------------

    def _open_root(self) -> _Dir:
        if not self._use_dir_fd:
            return _Dir(None, str(self._root))
        flags = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
        return _Dir(os.open(self._root, flags), str(self._root))

    @contextmanager
    def _opened_dir(self, rel: str, *, create: bool = False) -> Iterator[_Dir]:
        current = self._open_root()
        try:
            for part in rel.split("/") if rel else ():
                child = current.child(part, create=create)
                current.close()
                current = child
            yield current
        finally:
            current.close()

    @contextmanager
    def _opened_parent(self, rel: str, *, create: bool = False) -> Iterator[tuple[_Dir, str]]:
        parent, _, name = rel.rpartition("/")
        with self._opened_dir(parent, create=create) as directory:
            yield directory, name

    # -- files --------------------------------------------------------------------------

    def read_bytes(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """The content of the regular file at `path`.

        Args:
            path: The file.
            max_bytes: Refuse a file larger than this (None: no limit).

        Raises:
            PathEscape: `path` leaves the root.
            WorkspaceError: It does not exist, is not a regular file, is larger than
                `max_bytes`, a link is in the way, or it cannot be read.
        """
        rel = self._file_path(path)
        with _translated("read", rel), self._opened_parent(rel) as (directory, name):
            # O_NONBLOCK: a FIFO planted where a file was expected must not hang the run.
            fd = directory.open(name, os.O_RDONLY | _O_NONBLOCK)
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                raise WorkspaceError(f"cannot read {rel!r}: not a regular file")
            if max_bytes is not None and info.st_size > max_bytes:
                os.close(fd)
                raise WorkspaceError(
                    f"cannot read {rel!r}: it is {info.st_size} bytes, over the"
                    f" {max_bytes}-byte limit of one read")
            with open(fd, "rb", closefd=True) as handle:
                return handle.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        """Replace (or create) the file at `path` with `data`, atomically.

        Missing parent directories are created. The old content stays whole if the
        write fails; an existing file's permission bits are kept.

        Raises:
            PathEscape: `path` leaves the root.
            WorkspaceError: It is a directory, a link is in the way, or the write failed.
        """
        rel = self._file_path(path)
        with _translated("write", rel), self._opened_parent(rel, create=True) as (directory, name):
            mode = _existing_file_mode(directory, name)
            temp = f".io-{secrets.token_hex(8)}.tmp"
            temp_rel = f"{rel.rpartition('/')[0]}/{temp}".lstrip("/")
            recorder = _temporaries
            if recorder is not None:
                recorder[0](self._root, temp_rel)
            try:
                fd = directory.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                try:
                    try:
                        if mode is not None and hasattr(os, "fchmod"):
                            os.fchmod(fd, mode)
                        _write_all(fd, data)
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                    directory.replace(temp, name)
                except BaseException:
                    _discard(directory, temp)
                    raise
            finally:
                if recorder is not None:
                    recorder[1](self._root, temp_rel)
            directory.sync()

    def remove_temporary(self, path: str) -> bool:
        """Remove a temporary file a write of a killed `io` left at `path` (relative to
        the root, as `record_temporaries` was told it): only a regular file named as
        `write_bytes` names them, reached without following any link.

        Returns:
            Whether it was removed (False: another name, nothing there, not a regular
            file, a link on the way, or it could not be removed).
        """
        parent, _, name = path.rpartition("/")
        if (not _TEMPORARY.fullmatch(name) or path.startswith("/")
                or ".." in parent.split("/")):
            return False
        try:
            with self._opened_dir(parent, create=False) as directory:
                if not stat.S_ISREG(directory.lstat(name).st_mode):
                    return False
                directory.unlink(name)
        except OSError:
            return False
        return True

    def read_text(self, path: str) -> str:
        """The file at `path` decoded as UTF-8.

        Raises:
            WorkspaceError: As `read_bytes`, or the content is not UTF-8.
        """
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WorkspaceError(f"cannot read {path!r} as text: not UTF-8") from exc

    def write_text(self, path: str, text: str) -> None:
        """Write `text` encoded as UTF-8 (see `write_bytes`)."""
        self.write_bytes(path, text.encode("utf-8"))

    def remove(self, path: str) -> None:
        """Delete the file at `path` (a link inside the root is resolved like any path).

        Raises:
            PathEscape: `path` leaves the root.
            WorkspaceError: It does not exist or is a directory.
        """
        rel = self._file_path(path)
        with _translated("remove", rel), self._opened_parent(rel) as (directory, name):
            if stat.S_ISDIR(directory.lstat(name).st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            directory.unlink(name)

    def make_dir(self, path: str) -> None:
        """Create the directory `path` and its missing parents; an existing one is fine.

        Raises:
            PathEscape: `path` leaves the root.
            WorkspaceError: A component is a file or a link is in the way.
        """
        rel = self.resolve(path)
        with _translated("create directory", rel), self._opened_dir(rel, create=True):
            pass

    def _file_path(self, path: str) -> str:
        rel = self.resolve(path)
        if not rel:
            raise WorkspaceError(f"{path!r} is the workspace root, a directory")
        return rel

    # -- queries ------------------------------------------------------------------------

    def _lstat(self, path: str) -> os.stat_result | None:
        rel = self.resolve(path)
        with _translated("inspect", rel):
            try:
                if not rel:
                    return os.stat(self._root)
                with self._opened_parent(rel) as (directory, name):
                    return directory.lstat(name)
            except (FileNotFoundError, NotADirectoryError):
                return None

    def exists(self, path: str) -> bool:
        """Whether something (a file, a directory, anything) is at `path`.

        Raises:
            PathEscape: `path` leaves the root.
            WorkspaceError: A link is in the way of a parent directory at use time.
        """
        return self._lstat(path) is not None

    def is_file(self, path: str) -> bool:
        """Whether `path` is a regular file.

        Raises:
            PathEscape: `path` leaves the root.
        """
        found = self._lstat(path)
        return found is not None and stat.S_ISREG(found.st_mode)

    def is_dir(self, path: str) -> bool:
        """Whether `path` is a directory.

        Raises:
            PathEscape: `path` leaves the root.
        """
        found = self._lstat(path)
        return found is not None and stat.S_ISDIR(found.st_mode)

    def list_names(self, path: str) -> list[str]:
        """The sorted names in the directory `path` (``""`` is the root).

        Raises:
            PathEscape: `path` leaves the root.
            WorkspaceError: It is not a directory or cannot be listed.
        """
        return [entry.name for entry in self.list_dir(path)]

    def list_dir(self, path: str) -> list[DirEntry]:
        """The entries of the directory `path`, sorted by name; links are not followed.

        Raises:
            PathEscape: `path` leaves the root.
            WorkspaceError: It is not a directory or cannot be listed.
        """
        rel = self.resolve(path)
        with _translated("list", rel), self._opened_dir(rel) as directory:
            return [
                DirEntry(
                    name=name,
                    is_dir=stat.S_ISDIR(info.st_mode),
                    is_symlink=stat.S_ISLNK(info.st_mode),
                    size=info.st_size,
                )
                for name, info in directory.entries()
            ]

    def walk_files(self, path: str = "", *, max_files: int = 100_000) -> Iterator[str]:
        """Relative paths of the regular files under the directory `path`.

        Links are never followed (nor listed), ``.git`` is skipped at any depth, and
        the walk stops after `max_files` files. Directories that vanish or turn into
        links during the walk are passed over.

        Raises:
            PathEscape: `path` leaves the root.
            WorkspaceError: `path` is not a directory or cannot be listed.
        """
        count = 0
        for rel, info in self._tree(self.resolve(path)):
            if stat.S_ISREG(info.st_mode):
                if count >= max_files:
                    return
                count += 1
                yield rel

    def fingerprint(self) -> str:
        """A digest that changes when any file, link or directory outside ``.git`` does.

        It covers each entry's path, kind, inode, size and mtime; contents are not
        read, so it stays cheap enough to take every step. The stall detector compares
        it between steps.
        """
        digest = hashlib.blake2b(digest_size=16)
        for rel, info in self._tree(""):
            kind = stat.S_IFMT(info.st_mode)
            if stat.S_ISDIR(info.st_mode):
                digest.update(f"{kind}\0{rel}\n".encode("utf-8", "surrogateescape"))
                continue
            line = f"{kind}\0{rel}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}\n"
            digest.update(line.encode("utf-8", "surrogateescape"))
        return digest.hexdigest()

    def _tree(self, start: str) -> Iterator[tuple[str, os.stat_result]]:
        """(path, lstat) of every entry under `start` except ``.git``, depth first."""
        with _translated("list", start), self._opened_dir(start) as directory:
            first = directory.entries()
        stack: list[tuple[str, list[tuple[str, os.stat_result]]]] = [(start, first)]
        while stack:
            base, entries = stack.pop()
            subdirs: list[str] = []
            for name, info in entries:
                if name == _SKIPPED_DIR:
                    continue
                rel = f"{base}/{name}" if base else name
                yield rel, info
                if stat.S_ISDIR(info.st_mode):
                    subdirs.append(rel)
            for rel in reversed(subdirs):
                listing = self._listing(rel)
                if listing is not None:
                    stack.append((rel, listing))

    def _listing(self, rel: str) -> list[tuple[str, os.stat_result]] | None:
        try:
            with self._opened_dir(rel) as directory:
                return directory.entries()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            with _translated("list", rel):
                raise


def _check_encodable(path: str) -> None:
    """Refuse a path no file name can hold: a lone surrogate that is not an escaped byte.

    A name read from disk that was not UTF-8 comes back with ``surrogateescape`` (U+DC80
    to U+DCFF), and such a path encodes back to the very same bytes, so it is accepted.
    """
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise WorkspaceError(
            f"path '{escape_surrogates(path)}' holds a character no file name can hold"
            " (a lone surrogate)"
        ) from None


def _kind(location: str) -> int:
    """The file type bits of the entry at `location` (not following a link); `_GONE`
    when it does not exist, `_UNREADABLE` when it cannot be inspected."""
    try:
        return os.lstat(location).st_mode & _S_IFMT
    except (FileNotFoundError, NotADirectoryError):
        return _GONE
    except OSError:
        return _UNREADABLE


def _readlink(location: str) -> str | None:
    """The target of the link at `location`; None when it is no longer a link (swapped
    for a file since the lstat), which is then treated as what it now is."""
    try:
        return os.readlink(location)
    except OSError:
        return None


def _through(link: str) -> str:
    return f"leads outside the workspace root through link {link!r}"


def _is_absolute(path: str) -> bool:
    return path.startswith("/") or (_WINDOWS and os.path.isabs(path))


def _split_absolute(path: str) -> list[str]:
    drive, rest = os.path.splitdrive(path)
    if _WINDOWS:  # elsewhere a backslash is an ordinary character of a name
        rest = rest.replace("\\", "/")
    parts = [p for p in rest.split("/") if p not in ("", ".")]
    return [drive.lower(), *parts] if drive else parts


def _has_prefix(parts: list[str], prefix: list[str]) -> bool:
    if len(parts) < len(prefix):
        return False
    if os.sep == "\\":
        return [p.lower() for p in parts[: len(prefix)]] == [p.lower() for p in prefix]
    return parts[: len(prefix)] == prefix


def _unique_parts(*roots: str) -> list[list[str]]:
    out: list[list[str]] = []
    for root in roots:
        parts = _split_absolute(root)
        if parts not in out:
            out.append(parts)
    return out


def _existing_file_mode(directory: _Dir, name: str) -> int | None:
    try:
        info = directory.lstat(name)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


_TEMPORARY = re.compile(r"\.io-[0-9a-f]{16}\.tmp")
"""The names `write_bytes` gives its temporary files."""

TemporaryRecorder = tuple[Callable[[Path, str], None], Callable[[Path, str], None]]
"""(note, forget): told a temporary file's root and relative path before it is made, and
again once it is renamed over its target or discarded."""

_temporaries: TemporaryRecorder | None = None


def record_temporaries(recorder: TemporaryRecorder | None) -> None:
    """Have every write in this process name its temporary file to `recorder` (the
    process ledger, so that the next `io` removes one a `kill -9` left mid-write), or
    stop with None."""
    global _temporaries
    _temporaries = recorder


def _discard(directory: _Dir, name: str) -> None:
    try:
        directory.unlink(name)
    except OSError:
        pass  # best effort: the temp file's name is random and hidden

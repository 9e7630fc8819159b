"""`${env:NAME}` and `${file:PATH}` substitution inside configuration strings.

Substitution is single pass: a substituted value that itself contains `${…}` is kept
literally, never re-read. `$${` writes a literal `${`. A failed substitution (an unset
or empty variable, an unreadable or empty file, an unknown `${kind:…}`) is an error and
never an empty string, because an empty string in a boundary rule is a rule that
matches nothing. Error messages name the variable or the path, never a value. This
module reads the environment only from the mapping it is given, never `os.environ`.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

from harness_core._record import record
from harness_core.errors import ConfigError, MissingSecret

__all__ = ["Substituter", "is_reference"]

_TOKEN = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")

MAX_FILE_BYTES = 1 << 20
"""A `${file:}` larger than this is refused: it is meant for a key or a line, and an
unbounded read (a FIFO, `/dev/zero`) must not hang a config load."""


@record(frozen=False)
class Substituter:
    """Resolves substitutions and remembers every value it produced.

    Attributes:
        env: The environment `${env:}` reads.
        secrets: Every value a substitution produced so far (callers redact them).
    """

    env: Mapping[str, str]
    secrets: set[str] = field(default_factory=lambda: set[str]())

    def resolve(self, text: str, *, where: str, base_dir: Path) -> str:
        """Substitute every `${env:…}` and `${file:…}` in `text`.

        Args:
            text: A string value from a config file.
            where: ``'provider.api_key' in user scope (/p/io.toml)``, for messages.
            base_dir: Directory a relative `${file:PATH}` is resolved against.

        Returns:
            The text with every substitution replaced.

        Raises:
            ConfigError: A substitution failed, or a `${` is malformed.
        """
        if "$" not in text:
            return text
        parts: list[str] = []
        pos = 0
        for match in _TOKEN.finditer(text):
            parts.append(text[pos : match.start()])
            pos = match.end()
            token = match.group(0)
            if token == "$${":
                parts.append("${")
            elif match.group(1) is None:
                raise ConfigError(f"{where}: unterminated '${{' (write '$${{' for a literal)")
            else:
                parts.append(self._one(match.group(1), where=where, base_dir=base_dir))
        parts.append(text[pos:])
        return "".join(parts)

    def check(self, text: str, *, where: str) -> None:
        """Check `text`'s substitutions are well formed without resolving any (a value
        resolved later, when it is needed: a provider's key).

        Raises:
            ConfigError: A `${` is malformed or names an unknown kind.
        """
        for match in _TOKEN.finditer(text):
            if match.group(0) == "$${":
                continue
            if match.group(1) is None:
                raise ConfigError(f"{where}: unterminated '${{' (write '$${{' for a literal)")
            _parse(match.group(1), where)

    def redact(self, text: str) -> str:
        """`text` with every value produced so far replaced by ``***``."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text

    def _one(self, body: str, *, where: str, base_dir: Path) -> str:
        kind, arg = _parse(body, where)
        value = self._env(arg, where) if kind == "env" else self._file(arg, where, base_dir)
        if not value:
            raise MissingSecret(f"{where}: ${{{body}}} resolves to an empty value", name=arg)
        self.secrets.add(value)
        return value

    def _env(self, name: str, where: str) -> str:
        value = self.env.get(name)
        if value is None:
            raise MissingSecret(
                f"{where}: environment variable {name} is not set (${{env:{name}}})",
                name=name, hint=f"export {name}, or remove the reference",
            )
        return value

    def _file(self, raw: str, where: str, base_dir: Path) -> str:
        path = Path(raw)
        if not path.is_absolute():
            path = base_dir / path
        try:
            data = _read_regular(path, MAX_FILE_BYTES + 1)
        except _NotRegular as exc:
            raise ConfigError(
                f"{where}: cannot read ${{file:{raw}}} ({path}): it is {exc}, not a regular"
                " file",
                hint="point it at a regular file that holds the value",
            ) from None
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise MissingSecret(f"{where}: cannot read ${{file:{raw}}} ({path}): {reason}",
                                name=raw) from exc
        if len(data) > MAX_FILE_BYTES:
            raise ConfigError(
                f"{where}: ${{file:{raw}}} ({path}) is larger than {MAX_FILE_BYTES} bytes"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            # Chained cause deliberately dropped: its repr quotes the secret's bytes.
            raise ConfigError(f"{where}: ${{file:{raw}}} ({path}) is not UTF-8 text") from None
        return text.rstrip("\r\n")


_REFERENCE = re.compile(r"\$\{(?:env|file):[^}]*\}")


def is_reference(value: str) -> bool:
    """Whether `value` is still one unresolved reference (`${env:NAME}`,
    `${file:PATH}`): no secret, so the message saying it is unset may name it."""
    return _REFERENCE.fullmatch(value) is not None


def _parse(body: str, where: str) -> tuple[str, str]:
    kind, sep, arg = body.partition(":")
    if not sep or kind not in ("env", "file") or not arg:
        raise ConfigError(
            f"{where}: unknown substitution '${{{body}}}'",
            hint="use ${env:NAME} or ${file:PATH}; write $${ for a literal '${'",
        )
    return kind, arg


class _NotRegular(Exception):
    """The path is a FIFO, a directory or a device: what it is, as the message."""


def _read_regular(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of the regular file at `path`.

    Opened with O_NONBLOCK and checked by `fstat` before any read, so a FIFO (which
    would wait for a writer) or a device is refused instead of hanging the load.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _NotRegular("a FIFO" if stat.S_ISFIFO(mode) else
                              "a directory" if stat.S_ISDIR(mode) else "a device or socket")
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(limit)
    finally:
        os.close(fd)

"""Where output goes: JSON lines own stdout under `--json`; human text goes to stderr.

`NO_COLOR` (any value), `TERM=dumb` or a non-TTY stream gives plain text; `FORCE_COLOR`
overrides. The live panel needs more: a real terminal on stderr, never just forced colour.

Once a config is loaded (`redact_output`), every line written here passes through its
secret redactor first: no secret value io loaded is ever printed (#22).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

__all__ = [
    "answer_beside_trace",
    "drop",
    "error",
    "is_tty",
    "redact_output",
    "say",
    "use_color",
    "use_live",
    "write_json",
    "write_stdout",
]

_redact: Callable[[str], str] | None = None


def redact_output(redact: Callable[[str], str] | None) -> None:
    """Pass every line `write_json`, `write_stdout`, `say` and `error` print through `redact`."""
    global _redact
    _redact = redact


def is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def answer_beside_trace() -> bool:
    """Whether the answer printed on stdout lands where the trace (stderr) is shown: both
    on a terminal, or both the same file or pipe (`2>&1`, a CI log). Each message is then
    printed once: the trace leaves out the answer's `says:` line."""
    if is_tty(sys.stdout) and is_tty(sys.stderr):
        return True
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


def use_color(stream: TextIO | None = None) -> bool:
    """Whether to style text on `stream` (stderr by default)."""
    if os.environ.get("FORCE_COLOR"):
        return True
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    return is_tty(stream or sys.stderr)


def use_live() -> bool:
    """Whether `io run` may draw its live panel: colour on and stderr a real terminal."""
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    return is_tty(sys.stderr)


_UTF8_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
"""`json.dumps(obj, ensure_ascii=False, default=str)`, without building an encoder per
line (a run writes five or more lines a step)."""


def write_json(obj: Any) -> None:
    """One JSON object on one line of stdout, flushed at once."""
    text = _UTF8_JSON.encode(obj)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a name that is not UTF-8): escape it
        text = json.dumps(obj, ensure_ascii=True, default=str)
    write_stdout(text + "\n")


def write_stdout(text: str) -> None:
    """`text` on stdout, flushed at once; dropped when stdout's reader has gone
    (`io run ... | head`): a closed pipe never ends a run."""
    if _redact is not None:
        text = _redact(text)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        drop(sys.stdout)


def say(text: str) -> None:
    """A line of human text on stderr (dropped when stderr's reader has gone)."""
    if _redact is not None:
        text = _redact(text)
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except BrokenPipeError:
        drop(sys.stderr)


def drop(stream: TextIO) -> None:
    """Point `stream`, whose reader has gone, at the null device: what is still buffered
    and everything written later vanishes instead of failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):
        pass


def error(message: str, hint: str | None = None) -> None:
    """The one `io: error: …` line, and a hint when there is one."""
    say(f"io: error: {message}")
    if hint:
        say(f"hint: {hint}")

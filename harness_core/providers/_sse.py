"""Server-sent events: lines in, events out, per the WHATWG event-stream rules.

Kept here rather than taken from httpx-sse: the loop's per-step budget is a few
milliseconds, and this framer runs over lines httpx already split, with the two line
shapes every vendor sends (``event: x`` and ``data: {...}``) tested first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = ["SSEEvent", "iter_sse"]


class SSEEvent(NamedTuple):
    """One server-sent event: its ``event:`` name (``message`` by default) and data."""

    event: str
    data: str


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Frame SSE lines into events.

    Comment lines (``:`` keep-alives) and ``id:``/``retry:`` fields are skipped; several
    ``data:`` lines join with newlines; a blank line dispatches. An event that the
    stream never terminated with a blank line is dropped, never half-delivered.
    """
    event = ""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield SSEEvent(event or "message", "\n".join(data))
            event = ""
            data = []
            continue
        if line[0] == ":":
            continue
        if line.startswith("data: "):
            data.append(line[6:])
            continue
        if line.startswith("event: "):
            event = line[7:]
            continue
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value

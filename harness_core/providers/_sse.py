"""Server-sent events: body bytes in, lines, then events out, per the WHATWG
event-stream rules.

Kept here rather than taken from httpx-sse: the loop's per-step budget is a few
milliseconds, and this framer tests the two line shapes every vendor sends
(``event: x`` and ``data: {...}``) first. The lines are cut here too, not by httpx's
`iter_lines`: that one follows `str.splitlines`, which also breaks at U+2028, U+2029,
U+0085 and four control characters. The first three are legal unescaped inside a JSON
string, so a data line carrying one came out as two halves of an event that no longer
parsed. An event stream's lines end at CRLF, LF or CR, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = ["SSEEvent", "iter_sse", "sse_lines"]


class SSEEvent(NamedTuple):
    """One server-sent event: its ``event:`` name (``message`` by default) and data."""

    event: str
    data: str


def sse_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines of an event stream's body, as its chunks arrive.

    A line ends at CRLF, LF or CR (a CRLF cut between two chunks is one end); the
    text is UTF-8 with undecodable bytes replaced, whatever charset the reply named,
    and a byte order mark opening the stream is dropped. A last line the body did not
    end is yielded as it stands (`iter_sse` then drops its unfinished event). Cutting
    the bytes before decoding is safe: no byte of a multi-byte UTF-8 character is CR
    or LF.
    """
    rest = b""
    first = True
    for chunk in chunks:
        data = rest + chunk if rest else chunk
        if not data:
            continue
        held = b""
        if b"\r" in data:
            if data[-1:] == b"\r":  # maybe the first half of a CRLF: wait for the next byte
                data, held = data[:-1], b"\r"
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        rest = lines.pop() + held
        for line in lines:
            text = line.decode("utf-8", "replace")
            if first:
                first = False
                text = text.removeprefix("\ufeff")
            yield text
    if rest:
        text = rest.removesuffix(b"\r").decode("utf-8", "replace")
        yield text.removeprefix("\ufeff") if first else text


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

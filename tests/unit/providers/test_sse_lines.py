"""`sse_lines`: an event stream's body cut into lines at CR, LF and CRLF only, however
the body is chunked, held to the standard library's universal-newline reader as the
oracle (the same three line ends, and no others)."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from harness_core.providers._sse import iter_sse, sse_lines

# Text that may hold every other line break `str.splitlines` knows.
_TEXT = st.text(st.sampled_from("ab é✓\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e:{}\""), max_size=12)


def _oracle(body: bytes) -> list[str]:
    text = io.TextIOWrapper(io.BytesIO(body), encoding="utf-8", errors="replace",
                            newline=None).read()
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the body ended with a line end: no unfinished last line
    return lines


def _chunks(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(body)) for c in cuts})
    edges = [0, *points, len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:], strict=False)]


@given(st.lists(st.tuples(_TEXT, st.sampled_from(["\n", "\r", "\r\n"])), max_size=8),
       _TEXT, st.lists(st.integers(0, 200), max_size=8))
def test_lines_match_the_universal_newline_reader(
    lines: list[tuple[str, str]], tail: str, cuts: list[int]
) -> None:
    body = ("".join(text + end for text, end in lines) + tail).encode()
    assert list(sse_lines(_chunks(body, cuts))) == _oracle(body)


@given(st.binary(max_size=64), st.lists(st.integers(0, 64), max_size=6))
def test_any_bytes_give_the_reader_s_lines(body: bytes, cuts: list[int]) -> None:
    if body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]  # the reader keeps a BOM; the stream rules drop it (next test)
    assert list(sse_lines(_chunks(body, cuts))) == _oracle(body)


def test_a_crlf_cut_between_chunks_is_one_line_end() -> None:
    assert list(sse_lines([b"data: 1\r", b"\n\r", b"\n"])) == ["data: 1", ""]
    assert list(iter_sse(sse_lines([b"data: 1\r", b"\n\r", b"\n"]))) == [("message", "1")]


def test_a_byte_order_mark_opening_the_stream_is_dropped() -> None:
    assert list(sse_lines([b"\xef\xbb", b"\xbfdata: x\n\n"])) == ["data: x", ""]
    assert list(sse_lines([b"data: \xef\xbb\xbfx\n"])) == ["data: \ufeffx"]


def test_a_line_split_inside_a_utf8_character_decodes_whole() -> None:
    body = "data: café ✓\u2028\n\n".encode()
    for cut in range(1, len(body)):
        assert list(sse_lines([body[:cut], body[cut:]])) == ["data: café ✓\u2028", ""]

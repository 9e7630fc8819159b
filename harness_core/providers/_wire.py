"""What the vendor modules share when they read or write a wire format.

Compact JSON encoding of request bodies, parsing of tool-call arguments and of a JSON
body, reported counts, and the time-to-first-token mark. No I/O.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from harness_core.clock import Clock
from harness_core.errors import ProviderError
from harness_core.messages import Media, Message

__all__ = [
    "WIRE_JSON",
    "StreamClock",
    "base64_text",
    "data_url",
    "json_object",
    "media_text",
    "opt_int",
    "tool_arguments",
]

WIRE_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""How request bodies are encoded: compact UTF-8 JSON."""


class StreamClock:
    """Marks the first token of a stream against the attempt's start."""

    __slots__ = ("_clock", "_start", "first")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._start = clock.monotonic()
        self.first: float | None = None

    def mark(self) -> None:
        """Record now as the first token, unless one was already recorded."""
        if self.first is None:
            self.first = (self._clock.monotonic() - self._start) * 1000.0


def opt_int(value: object) -> int | None:
    """A reported count, or None when the vendor did not report one (never 0 for absent)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def tool_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Parse a tool call's argument text: (object, None), or ({}, text) when it is not one.

    The loop turns a call with raw arguments into an observation telling the model its
    arguments were not a JSON object, so a malformed call never aborts the run.
    """
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    if not isinstance(value, dict):
        return {}, text
    return value, None


def json_object(text: str | bytes, what: str) -> dict[str, Any]:
    """Parse the JSON object of a successful (2xx) answer.

    Raises:
        ProviderError: The body is not a JSON object. Not retryable: a server that
            answers 200 with the wrong shape answers the same way the next time.
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ProviderError(
            f"{what}: a 200 answer of the wrong shape: not JSON", retryable=False
        ) from exc
    if not isinstance(data, dict):
        raise ProviderError(
            f"{what}: a 200 answer of the wrong shape: not a JSON object", retryable=False
        )
    return data


def media_text(message: Message) -> tuple[str, tuple[Media, ...]]:
    """A tool message's text and the images it carries with their bytes; an image read
    back without its bytes is named in the text instead."""
    missing = [m.placeholder() for m in message.media if not m.data]
    text = "\n".join([message.content, *missing]) if missing else message.content
    return text, tuple(m for m in message.media if m.data)


def base64_text(media: Media) -> str:
    return base64.b64encode(media.data).decode("ascii")


def data_url(media: Media) -> str:
    """The image as a ``data:`` URL (OpenAI's ``image_url``)."""
    return f"data:{media.media_type};base64,{base64_text(media)}"

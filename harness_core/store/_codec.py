"""JSON encoding of recorded values. Payloads are JSON, never pickle."""

from __future__ import annotations

import json
from typing import Any

from harness_core.messages import Media, Message, Role, ToolCall

__all__ = ["dumps", "loads", "message_from_json", "message_to_json"]


_UTF8_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
"""Compact UTF-8 JSON; one encoder for every payload (`json.dumps` with options builds
one per call, and a step writes half a dozen payloads)."""


def dumps(value: Any) -> str:
    """JSON text for a payload column; lossless for any `str`, lone surrogates included.

    Plain UTF-8 is kept readable; a payload holding a lone surrogate (a file name that
    is not UTF-8, decoded with ``surrogateescape``) falls back to ASCII escapes, which
    SQLite stores and `loads` turns back into the very same string.
    """
    text = _UTF8_JSON.encode(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=True, default=str)
    return text


def loads(text: str | None) -> Any:
    if text is None:
        return None
    return json.loads(text)


def message_to_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role.value, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [call.to_json() for call in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    if message.is_error:
        out["is_error"] = True
    if message.media:
        # A hash and the path, never the image bytes (megabytes a step otherwise).
        out["media"] = [m.to_json() for m in message.media]
    return out


def message_from_json(data: dict[str, Any]) -> Message:
    calls = tuple(ToolCall.from_json(c) for c in data.get("tool_calls", ()))
    return Message(
        role=Role(data["role"]),
        content=str(data.get("content", "")),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        is_error=bool(data.get("is_error", False)),
        media=tuple(Media.from_json(m) for m in data.get("media", ()) if isinstance(m, dict)),
    )

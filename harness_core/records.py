"""Typed records that cross module boundaries: what a completion reported beyond its
message (`Citation`, `ServerToolCall`, `ProviderAttempt`) and what a write changed
(`Edit`).

Providers build them, the loop carries them and the store writes them; none of them is
a dict on the way. Each has `to_json()` (the JSON object the store, the events and the
CLI's ``--json`` write, with the keys they have always had) and `from_json()`, which
reads that object back and ignores keys it does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from harness_core._record import record

__all__ = ["Citation", "Edit", "ProviderAttempt", "ServerToolCall"]


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _opt_int(value: object) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    return int(value) if isinstance(value, (int, float, str)) else None


@record(slots=True)
class Citation:
    """A citation the provider returned; evidence about the answer, not verified.

    Attributes:
        url: The cited source.
        title: Its title, when the vendor gave one.
        cited_text: The passage cited, when the vendor gave one.
    """

    url: str
    title: str | None = None
    cited_text: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "title": self.title, "cited_text": self.cited_text}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Citation:
        return Citation(str(data.get("url", "")), _opt_str(data.get("title")),
                        _opt_str(data.get("cited_text")))


@record(slots=True)
class ServerToolCall:
    """A tool the provider executed itself (web search or fetch).

    Attributes:
        name: The vendor's tool name (``web_search`` …).
        input: What the model asked it, as the vendor reported it (open JSON: the
            vendor's own shape).
    """

    name: str
    input: Mapping[str, Any] = field(default_factory=lambda: {})

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "input": dict(self.input)}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> ServerToolCall:
        raw = data.get("input")
        return ServerToolCall(str(data.get("name", "")), dict(raw) if isinstance(raw, Mapping)
                              else {})


@record(slots=True)
class ProviderAttempt:
    """One try at a completion, successful or not, for the record.

    Attributes:
        provider: The provider's name (``anthropic``, ``openai``, ``scripted`` …).
        model: The model asked for.
        ok: Whether this attempt produced the completion.
        error: A redacted one-line error, when it failed.
        status: The HTTP status, when there was one.
    """

    provider: str
    model: str
    ok: bool
    error: str | None = None
    status: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "ok": self.ok,
                "error": self.error, "status": self.status}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> ProviderAttempt:
        return ProviderAttempt(str(data.get("provider", "")), str(data.get("model", "")),
                               bool(data.get("ok")), _opt_str(data.get("error")),
                               _opt_int(data.get("status")))

    @staticmethod
    def of(failure: object) -> ProviderAttempt:
        """`failure` if it is an attempt, else a failed attempt that names it."""
        if isinstance(failure, ProviderAttempt):
            return failure
        return ProviderAttempt("", "", False, str(failure))


@record(slots=True)
class Edit:
    """The size of one write to one file (a size, not a diff).

    Attributes:
        path: The file, relative to the workspace root.
        lines_added: Lines added, after trimming the common head and tail.
        lines_removed: Lines removed, likewise.
        bytes_before: The file's size before (0 when it did not exist).
        bytes_after: Its size after.
    """

    path: str
    lines_added: int
    lines_removed: int
    bytes_before: int
    bytes_after: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "lines_added": self.lines_added,
                "lines_removed": self.lines_removed, "bytes_before": self.bytes_before,
                "bytes_after": self.bytes_after}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Edit:
        return Edit(str(data.get("path", "")), int(data.get("lines_added") or 0),
                    int(data.get("lines_removed") or 0), int(data.get("bytes_before") or 0),
                    int(data.get("bytes_after") or 0))

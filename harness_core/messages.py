"""Wire-neutral conversation types shared by providers, tools and the loop.

Providers translate these to and from each vendor's shape; tools never see a vendor
shape. Everything here is a frozen dataclass, so a message that was recorded cannot be
changed afterwards. JSON enters only through `from_json` constructors.
"""

from __future__ import annotations

import json
from dataclasses import field
from enum import Enum
from typing import Any

from harness_core._record import record

__all__ = [
    "IMAGE_MEDIA_TYPES", "Media", "Message", "Role", "ToolCall", "ToolResult", "ToolSpec",
    "Usage", "escape_surrogates",
]

IMAGE_MEDIA_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The image types every supported vendor accepts as image content."""


@record
class Media:
    """An image carried to the model with a tool result (from `view_image`).

    The store records everything but `data`: a resumed run reads the file again
    (and checks `source_sha256`) rather than keeping megabytes per step.

    Attributes:
        media_type: One of `IMAGE_MEDIA_TYPES`.
        data: The bytes the model is sent (already within every vendor's limits);
            empty when the message was read back from the store.
        path: The workspace path it came from.
        source_sha256: Hex SHA-256 of the file as it was read.
        width: Width in pixels of what is sent.
        height: Height in pixels of what is sent.
    """

    media_type: str
    data: bytes = field(default=b"", repr=False)
    path: str = ""
    source_sha256: str = ""
    width: int = 0
    height: int = 0

    def to_json(self) -> dict[str, Any]:
        """Everything but the bytes (what the store keeps)."""
        return {"media_type": self.media_type, "path": self.path,
                "source_sha256": self.source_sha256, "width": self.width,
                "height": self.height, "bytes": len(self.data)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> Media:
        return Media(media_type=str(data.get("media_type", "")), path=str(data.get("path", "")),
                     source_sha256=str(data.get("source_sha256", "")),
                     width=int(data.get("width", 0)), height=int(data.get("height", 0)))

    def placeholder(self) -> str:
        """What a model is told when the bytes are not at hand."""
        return (f"[image {self.path} ({self.media_type}) is not available any more; call"
                " view_image again to see it]")


def escape_surrogates(text: str) -> str:
    """`text` with every lone surrogate spelled out, so it can be encoded as UTF-8.

    A byte that was not UTF-8 in a file name (decoded with ``surrogateescape`` as
    U+DC80..U+DCFF) becomes ``\\xNN``; any other lone surrogate becomes ``\\uXXXX``.
    Text that is already valid is returned as it is (the common case costs one check).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_spelled(ch) for ch in text)
    return text


def _spelled(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return ch


class Role(Enum):
    """Who said a message. Closed set."""

    SYSTEM = "system"
    """The harness's instructions to the model."""
    USER = "user"
    """The goal, an operator's steer or answer."""
    ASSISTANT = "assistant"
    """What the model said, with the tool calls it asked for."""
    TOOL = "tool"
    """The observation of one tool call."""


@record
class ToolCall:
    """One tool call the model asked for.

    Attributes:
        id: The call id (the vendor's, or one the harness made).
        name: The tool's name.
        arguments: The parsed JSON object of arguments.
        raw_arguments: The arguments text when it was not valid JSON, else None.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=lambda: {})
    raw_arguments: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.raw_arguments is not None:
            out["raw_arguments"] = self.raw_arguments
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> ToolCall:
        raw = data.get("raw_arguments")
        args = data.get("arguments") or {}
        return ToolCall(
            id=str(data.get("id", "")),
            name=str(data["name"]),
            arguments=dict(args) if isinstance(args, dict) else {},
            raw_arguments=raw if isinstance(raw, str) else None,
        )

    def key(self) -> str:
        """A stable text form of name and arguments, for repetition detection."""
        return self.name + ":" + json.dumps(self.arguments, sort_keys=True, default=str)


@record
class ToolResult:
    """The observation of one tool call, as the model will see it.

    Attributes:
        call_id: The id of the call this answers.
        name: The tool's name.
        output: The text the model sees.
        is_error: True when the call failed or was refused.
        media: Images the model sees with the text (from `view_image`).
    """

    call_id: str
    name: str
    output: str
    is_error: bool = False
    media: tuple[Media, ...] = ()


@record
class ToolSpec:
    """A tool as advertised to a model: a name, a description, a JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@record
class Message:
    """One message of the conversation.

    Attributes:
        role: Who said it.
        content: Its text (may be empty for an assistant turn that only calls tools).
        tool_calls: The calls an assistant message asked for.
        tool_call_id: For a tool message, the call it answers.
        name: For a tool message, the tool's name.
        is_error: For a tool message, whether it reports a failure or refusal.
        media: For a tool message, the images that came with it.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    media: tuple[Media, ...] = ()

    @staticmethod
    def system(text: str) -> Message:
        return Message(Role.SYSTEM, text)

    @staticmethod
    def user(text: str) -> Message:
        return Message(Role.USER, text)

    @staticmethod
    def assistant(text: str, tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return Message(Role.ASSISTANT, text, tool_calls)

    @staticmethod
    def tool(result: ToolResult) -> Message:
        return Message(
            Role.TOOL, result.output, (), result.call_id, result.name, result.is_error,
            result.media,
        )


@record
class Usage:
    """Token counts as the provider reported them; None means "not reported", not zero.

    Attributes:
        prompt_tokens: Input tokens, cache reads and writes included.
        completion_tokens: Output tokens, reasoning included.
        total_tokens: The total as reported (never re-derived from the parts).
        cache_read_tokens: Of prompt_tokens, those read from the cache.
        cache_write_tokens: Of prompt_tokens, those written to the cache.
        reasoning_tokens: Of completion_tokens, those spent reasoning.
        server_tool_requests: Provider-executed tool requests the vendor reported.
        estimated: True when the provider reported no counts and io estimated
            `prompt_tokens` and `completion_tokens` itself (`harness_core.run` says
            how), so budgets still hold; spend and the trace mark such calls.
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    server_tool_requests: int | None = None
    estimated: bool = False

    @property
    def is_reported(self) -> bool:
        """Whether the provider reported any token count at all."""
        return not (self.prompt_tokens is None and self.completion_tokens is None
                    and self.total_tokens is None)

    def billed_tokens(self, cache_read_weight: float = 1.0) -> int:
        """Tokens to draw from a token budget, counted as the vendor bills them.

        Fresh input (cache writes included) and output count whole; a token read from
        the prompt cache counts `cache_read_weight` of one (vendors bill cache reads at
        a fraction of the input price). Without a prompt/completion split the reported
        total is drawn as it is.

        Args:
            cache_read_weight: What one cached token counts for (1.0: as a fresh one).
        """
        if self.prompt_tokens is None and self.completion_tokens is None:
            return self.total_tokens or 0
        prompt = self.prompt_tokens or 0
        cached = min(self.cache_read_tokens or 0, prompt)
        weighted = prompt - cached + cached * cache_read_weight
        return int(round(weighted)) + (self.completion_tokens or 0)

    def to_json(self) -> dict[str, int | bool | None]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "server_tool_requests": self.server_tool_requests,
            "estimated": self.estimated,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Usage:
        def opt(name: str) -> int | None:
            value = data.get(name)
            return int(value) if isinstance(value, (int, float)) else None

        return Usage(
            prompt_tokens=opt("prompt_tokens"),
            completion_tokens=opt("completion_tokens"),
            total_tokens=opt("total_tokens"),
            cache_read_tokens=opt("cache_read_tokens"),
            cache_write_tokens=opt("cache_write_tokens"),
            reasoning_tokens=opt("reasoning_tokens"),
            server_tool_requests=opt("server_tool_requests"),
            estimated=data.get("estimated") is True,
        )

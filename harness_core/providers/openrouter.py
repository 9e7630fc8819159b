"""OpenRouter: its OpenAI-compatible API (``/api/v1/chat/completions``) with its own headers.

The wire format is Chat Completions (`providers.openai`); this module adds what differs:
the attribution headers, usage accounting switched on, and web search as the ``web``
plugin, which takes a result count and no domain filter and cannot fetch. When it
routes to Anthropic (a model ``anthropic/...``), it carries Anthropic's ``cache_control``
breakpoints as OpenRouter documents them, on text parts: one on the system prompt (which
follows the tools, so both are cached) and one on the last message, moving to the end
with every step. It never touches the store or the terminal.
"""

from __future__ import annotations

from typing import Any

from harness_core.messages import Message, Role
from harness_core.providers._base import CompletionRequest, WebAccess
from harness_core.providers._wire import WIRE_JSON
from harness_core.providers.openai import OpenAIProvider, wire_message

__all__ = ["OpenRouterProvider", "routes_to_anthropic"]

_CACHE_MARK = {"type": "ephemeral"}


def routes_to_anthropic(model: str) -> bool:
    """Whether OpenRouter serves `model` from Anthropic (which caches only marked text)."""
    return model.startswith("anthropic/")


class OpenRouterProvider(OpenAIProvider):
    """The `openrouter` provider: many vendors' models behind one OpenAI-shaped API.

    Takes the same arguments as `OpenAIProvider`; the key variable is
    ``OPENROUTER_API_KEY`` and `base_url` defaults to ``https://openrouter.ai/api/v1``.
    A `[web]` `max_uses` becomes the plugin's ``max_results``.
    """

    name = "openrouter"
    env_var = "OPENROUTER_API_KEY"
    default_base_url = "https://openrouter.ai/api/v1"
    referer = "https://pypi.org/project/io-harness/"
    """Sent as ``HTTP-Referer``: OpenRouter attributes traffic to an app by it."""
    title = "io"
    """Sent as ``X-Title``: the app name OpenRouter shows beside that traffic."""

    def _headers(self, request: CompletionRequest) -> dict[str, str]:
        headers = super()._headers(request)
        headers["HTTP-Referer"] = self.referer
        headers["X-Title"] = self.title
        return headers

    def _body(self, request: CompletionRequest, *, stream: bool) -> dict[str, Any]:
        self._marks = routes_to_anthropic(request.model or self.config.model)
        body = super()._body(request, stream=stream)
        # Ask for the detailed usage object (cached and reasoning breakdowns).
        body["usage"] = {"include": True}
        return body

    def _declare_web(self, body: dict[str, Any], web: WebAccess) -> None:
        plugin: dict[str, Any] = {"id": "web"}
        if web.max_uses is not None:
            plugin["max_results"] = web.max_uses
        body["plugins"] = [plugin]

    _marks = False
    """Whether the request being encoded carries Anthropic's cache breakpoints."""
    _system_mark: Message | None = None
    """The system message that carries the first breakpoint."""

    def _messages_json(self, messages: tuple[Message, ...]) -> bytes:
        # The earlier messages are encoded (and kept between steps) as for any model;
        # only the last one is encoded again, with the moving breakpoint. A last message
        # whose images follow it in a turn of their own keeps the plain form.
        if not self._marks or not messages or messages[-1].media:
            return super()._messages_json(messages)
        if self._system_mark is None and messages[0].role is Role.SYSTEM:
            self._system_mark = messages[0]  # one mark on the system prompt, however many
        head = super()._messages_json(messages[:-1])
        if self._encoded_prefix is not None and self._encoded_prefix[2]:
            return super()._messages_json(messages)
        last = WIRE_JSON.encode(_marked(wire_message(messages[-1], self.config.system_role)))
        inner = head[1:-1]
        return b"".join((b"[", inner, b"," if inner else b"", last.encode(), b"]"))

    def _encode_message(self, message: Message) -> bytes:
        entry = wire_message(message, self.config.system_role)
        if self._marks and message is self._system_mark:
            entry = _marked(entry)
        return WIRE_JSON.encode(entry).encode()


def _marked(entry: dict[str, Any]) -> dict[str, Any]:
    """A message with its text as one part carrying the cache breakpoint (OpenRouter
    takes ``cache_control`` on text parts only); a message without text is left as is."""
    content = entry.get("content")
    if not isinstance(content, str) or not content:
        return entry
    part = {"type": "text", "text": content, "cache_control": _CACHE_MARK}
    return {**entry, "content": [part]}

"""OpenRouter: its OpenAI-compatible API (``/api/v1/chat/completions``) with its own headers.

The wire format is Chat Completions (`providers.openai`); this module adds what differs:
the attribution headers, usage accounting switched on, and web search as the ``web``
plugin, which takes a result count and no domain filter and cannot fetch. It never
touches the store or the terminal.
"""

from __future__ import annotations

from typing import Any

from harness_core.providers._base import CompletionRequest, WebAccess
from harness_core.providers.openai import OpenAIProvider

__all__ = ["OpenRouterProvider"]


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
        body = super()._body(request, stream=stream)
        # Ask for the detailed usage object (cached and reasoning breakdowns).
        body["usage"] = {"include": True}
        return body

    def _declare_web(self, body: dict[str, Any], web: WebAccess) -> None:
        plugin: dict[str, Any] = {"id": "web"}
        if web.max_uses is not None:
            plugin["max_results"] = web.max_uses
        body["plugins"] = [plugin]

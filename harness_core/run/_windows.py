"""How many tokens each known model takes in (its context window): what the `compact`
context strategy's threshold is a share of.

The table holds the models io's documentation and examples name, as their vendors
published them (2026-11); `[context] window` sets the number for any other model (or
overrides this one). A model not in the table with no `[context] window` cannot be
compacted: the configuration is refused rather than guessed.
"""

from __future__ import annotations

import re

__all__ = ["KNOWN_CONTEXT_WINDOWS", "context_window_of"]

KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "claude-opus-4-5": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "gpt-5-codex": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "o1": 200_000,
}
"""Model string → context window in tokens (input and output together)."""

_DATED = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")


def context_window_of(model: str) -> int | None:
    """The context window of `model`, or None when io does not know it.

    A router's vendor prefix (``anthropic/claude-sonnet-4.5``), a dated snapshot suffix
    (``claude-sonnet-4-5-20250929``, ``gpt-4o-2024-08-06``) and dots for dashes in a
    version (OpenRouter's spelling) are looked through.
    """
    name = model.strip().lower()
    for candidate in (name, name.rsplit("/", 1)[-1]):
        for form in (candidate, _DATED.sub("", candidate)):
            for spelled in (form, form.replace(".", "-")):
                if spelled in KNOWN_CONTEXT_WINDOWS:
                    return KNOWN_CONTEXT_WINDOWS[spelled]
    return None

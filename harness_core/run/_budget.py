"""Budget: the ceilings a run draws against, per step."""

from __future__ import annotations

from harness_core._record import record

__all__ = ["DEFAULT_CACHE_READ_WEIGHT", "Budget"]

DEFAULT_CACHE_READ_WEIGHT = 0.1
"""A cache read billed at a tenth of a fresh input token (Anthropic; OpenAI's GPT-5 and
GPT-4.1 families bill 10% and 25%: set `[budget] cache_read_weight` to match yours)."""


@record
class Budget:
    """The `[budget]` table, typed. None means no ceiling.

    By default steps and the wall clock bound a run; a token or cost ceiling is opt-in,
    because a conversation's prompt is re-sent every step and a cumulative token cap
    that fits a short run stops an ordinary long one.

    Attributes:
        max_steps: Completions a run may ask for.
        max_tokens: Tokens a run may spend, counted as billed (see `Usage.billed_tokens`):
            fresh input and output whole, cache reads weighted by `cache_read_weight`.
            None (the default): no token ceiling.
        max_cost_usd: Derived cost a run may spend (needs prices for the model).
        wall_seconds: Wall-clock seconds a run may take, summed over its drives.
        cache_read_weight: What one token read from the prompt cache counts for against
            `max_tokens`; 0.1 is what Anthropic and OpenAI's current models bill a
            cache read at, relative to a fresh input token.
    """

    max_steps: int | None = 50
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    wall_seconds: float | None = 1800.0
    cache_read_weight: float = DEFAULT_CACHE_READ_WEIGHT

"""Prices: the operator's `[prices]` table, USD per million tokens of each model. Data
and one multiplication; reports that group spend are `harness_core.spend`'s.

Config loading carries a `PriceTable` on every start (a run's cost budget and the live
view price calls with it), so this module imports nothing from io but the record
decorator.
"""

from __future__ import annotations

from dataclasses import field
from datetime import date
from typing import TYPE_CHECKING

from harness_core._record import record

if TYPE_CHECKING:
    from harness_core.messages import Usage

__all__ = ["ModelPrice", "PriceTable"]

_MTOK = 1_000_000.0


@record
class ModelPrice:
    """Prices of one model in USD per million tokens.

    Cache reads and writes are billed at their own price when one is given, and at
    the input price otherwise (they are part of the prompt count).
    """

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def cost_of(self, usage: Usage) -> float | None:
        """The USD cost of one call's `usage`, or None when its counts were not reported."""
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        if prompt is None or completion is None:
            return None
        plain = prompt
        total = completion * self.output_per_mtok
        if self.cache_read_per_mtok is not None and usage.cache_read_tokens:
            plain -= usage.cache_read_tokens
            total += usage.cache_read_tokens * self.cache_read_per_mtok
        if self.cache_write_per_mtok is not None and usage.cache_write_tokens:
            plain -= usage.cache_write_tokens
            total += usage.cache_write_tokens * self.cache_write_per_mtok
        total += max(0, plain) * self.input_per_mtok
        return total / _MTOK


@record
class PriceTable:
    """The `[prices]` table: an as-of date and a price per model string.

    Attributes:
        as_of: The date the prices were true (required: prices go stale).
        models: Model string → price.
    """

    as_of: date
    models: dict[str, ModelPrice] = field(default_factory=lambda: {})

    def price_for(self, model: str) -> ModelPrice | None:
        """The price of `model`, or None when the table does not price it."""
        return self.models.get(model)

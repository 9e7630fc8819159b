"""Budget: the ceilings a run draws against, per step."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Budget"]


@dataclass(frozen=True)
class Budget:
    """The `[budget]` table, typed. None means no ceiling.

    Attributes:
        max_steps: Completions a run may ask for.
        max_tokens: Tokens (as reported) a run may spend.
        max_cost_usd: Derived cost a run may spend (needs prices for the model).
        wall_seconds: Wall-clock seconds a run may take, summed over its drives.
    """

    max_steps: int | None = 50
    max_tokens: int | None = 400_000
    max_cost_usd: float | None = None
    wall_seconds: float | None = 1800.0

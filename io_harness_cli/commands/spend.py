"""`io spend`: tokens and derived cost, grouped (filled in with the providers work)."""

from __future__ import annotations


def spend() -> None:
    """Tokens and derived cost by model, run, session or day."""

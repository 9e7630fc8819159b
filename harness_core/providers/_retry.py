"""When a failed completion is tried again, and how long to wait first.

Pure functions over statuses, headers and a jitter source; the waiting itself is done
by the caller through the injected `Clock`. Never sleeps, never touches the network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from harness_core._record import record

__all__ = ["RetryPolicy", "backoff_delay", "is_retryable_status", "parse_retry_after"]


@record
class RetryPolicy:
    """How a provider retries a retryable failure.

    Attributes:
        max_retries: Retries after the first try (so ``max_retries + 1`` tries in all).
        base_delay: Seconds before the first retry, before jitter.
        max_delay: Ceiling on one computed backoff, before jitter.
        max_retry_after: A ``retry-after`` longer than this ends the retries at once
            (the fallback, if any, is better than an hour's wait inside a step).
    """

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 60.0


def is_retryable_status(status: int) -> bool:
    """429 and every 5xx (529 included) are worth another try; other 4xx are not."""
    return status == 429 or status >= 500


def backoff_delay(
    retry: int, policy: RetryPolicy, jitter: Callable[[], float], retry_after: float | None
) -> float:
    """Seconds to wait before retry number `retry` (0-based).

    A vendor's ``retry-after`` is honoured exactly. Otherwise the delay doubles from
    `policy.base_delay` up to `policy.max_delay` and is scaled by a jitter factor in
    [0.5, 1.0] drawn from `jitter` (a ``random.random``-like callable), so clients that
    failed together do not retry together.
    """
    if retry_after is not None:
        return max(0.0, retry_after)
    ceiling = min(policy.max_delay, policy.base_delay * float(2**retry))
    return ceiling * (0.5 + 0.5 * jitter())


def parse_retry_after(headers: Mapping[str, str], now: datetime) -> float | None:
    """Seconds a response asks us to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may be delta-seconds or an HTTP date; an unparseable value is
    ignored (None) rather than guessed at.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, float((when - now).total_seconds()))

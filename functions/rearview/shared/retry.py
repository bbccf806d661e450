"""Bounded retries for what botocore's own retry modes do not cover, and a server's `Retry-After`.

SDK calls are retried by botocore (standard mode, configured on each client). This policy is for
the DynamoDB outcomes it does not retry: transaction conflicts, throttled items inside a cancelled
transaction, and unprocessed batch keys (`backends/dynamodb/table_client.py`). `retry_after_s`
reads an HTTP `Retry-After` for the HTTP clients that wait one out (the Python client's transport,
the OpenAI-compatible embedder).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` in seconds: delta-seconds or an HTTP date; None when absent or unreadable.

    `now` (epoch seconds, default the clock) is what an HTTP date is counted from.
    """
    value = (value or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC without a zone
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded exponential backoff with full jitter.

    Attempt `n` (0-based) that fails retryably waits `uniform(0, min(max_delay, base_delay * 2**n))`
    before attempt `n + 1`; after `max_attempts` attempts the caller gives up with a typed error.
    """

    max_attempts: int = 5
    base_delay: float = 0.05
    max_delay: float = 2.0
    sleep: Callable[[float], None] = time.sleep

    def backoff(self, attempt: int) -> None:
        """Sleep before retrying after failed attempt `attempt` (0-based)."""
        self.sleep(_JITTER.uniform(0.0, min(self.max_delay, self.base_delay * 2**attempt)))


_JITTER = random.Random()  # noqa: S311 -- backoff jitter; nothing secret depends on it

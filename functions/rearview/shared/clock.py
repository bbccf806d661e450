"""Clocks: every timestamp in Rearview comes from an injected `Clock` (UTC, aware)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Source of the current time. Must return an aware UTC datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to: for tests and simulations."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        """Move forward by `timedelta(**delta)` and return the new time."""
        self._now += timedelta(**delta)
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when


def to_iso(when: datetime) -> str:
    """ISO-8601 in UTC with a `Z` suffix, second precision (the API's timestamp format)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str | datetime, field: str = "time") -> datetime:
    """Parse an ISO-8601 timestamp (a naive one is taken as UTC) into an aware UTC datetime.

    Anything else, including a time that falls outside years 1..9999 in UTC, is an
    `InvalidInputError` naming `field`.
    """
    from rearview.errors import InvalidInputError

    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInputError(field, f"not an ISO-8601 timestamp: {value!r}") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError as exc:  # 0001-01-01T00:30+01:00 is in year 0 once in UTC
        raise InvalidInputError(field, f"is outside years 1..9999 once converted to UTC: {value!r}") from exc

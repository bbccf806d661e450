"""Retention and reinforcement constants: how long memories live and how recall strengthens them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rearview.models import MemoryType


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """Default lifetime by importance (None = kept indefinitely); working memory ends with its session.

    A memory's own `ttl_days` overrides this. `expires_at` is recomputed when a memory is
    written, merged or updated.
    """

    days_by_importance: dict[int, float | None] = field(
        default_factory=lambda: {5: None, 4: 365.0, 3: 180.0, 2: 30.0, 1: 7.0}
    )
    working_days: float = 1.0

    def expires_at(
        self, memory_type: MemoryType, importance: int, ttl_days: float | None, now: datetime
    ) -> datetime | None:
        """When a memory written now should expire."""
        if ttl_days is not None:
            days: float | None = ttl_days
        elif memory_type is MemoryType.WORKING:
            days = self.working_days
        else:
            days = self.days_by_importance.get(importance)
        return None if days is None else now + timedelta(days=days)


@dataclass(frozen=True, slots=True)
class ReinforcementPolicy:
    """Strength starts at 1.0, rises by `recall_boost` per recall (up to `max_strength`)."""

    initial_strength: float = 1.0
    recall_boost: float = 0.1
    merge_boost: float = 0.2
    max_strength: float = 2.0

    def reinforced(self, strength: float, boost: float) -> float:
        """Strength after one reinforcement, bounded by `max_strength`."""
        return min(self.max_strength, strength + boost)


DEFAULT_RETENTION = RetentionPolicy()
DEFAULT_REINFORCEMENT = ReinforcementPolicy()

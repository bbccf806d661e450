"""Lifecycle constants: how long memories live, how recall strengthens them, how disuse fades them.

Every number that decides a memory's fate lives here; change them here (or per tenant, through
`TenantPolicy`) and nowhere else.

Strength is *anchored*: a memory's stored `strength` is its strength at `last_accessed_at`.

    effective(t) = strength * 0.5 ** (days(t - last_accessed_at) / half_life(importance))
    recall at t:   strength := min(max_strength, effective(t) + recall_boost);  last_accessed_at := t

Recall restarts the clock and re-anchors the strength it had *then*, plus the boost (the spacing
effect: what is used often fades slowly; a memory unused for a year and recalled once stays weak).
Only a relevant recall counts: a search hit whose fused relevance reaches `min_relevance`.
Nothing is written when time passes: ranking and the lifecycle jobs compute the
effective strength from the anchor, so applying decay twice changes nothing.

A memory leaves the hot store (for the archive) when one of these holds:

- **faded**: effective strength below `DecayPolicy.archive_threshold` and importance below
  `DecayPolicy.protected_importance` (5: never faded);
- **retention**: `expires_at` falls before the next job run. `expires_at` comes from the memory's
  own `ttl_days`, else `RetentionPolicy` (by importance; working memory by `working_days`). A
  policy-derived expiry is *renewed* instead when the memory was recalled within its retention
  (`RetentionPolicy.renewal`); an explicit `ttl_days` and working memory are never renewed.

With the defaults, a memory that is written once and never recalled lives:

| importance | 1 | 2 | 3 | 4 | 5 |
|---|---|---|---|---|---|
| until | 7 d (retention) | 30 d (retention) | ~100 d (faded) | ~199 d (faded) | forever |
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rearview.models import Memory, MemoryType

RENEWAL_TOLERANCE = timedelta(seconds=1)
"""How far `expires_at - updated_at` may differ from the policy's days and still count as policy-derived."""


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """Default lifetime by importance (None = kept indefinitely); working memory ends with its session.

    A memory's own `ttl_days` overrides this. `expires_at` is recomputed when a memory is
    written, merged or updated, and renewed by the retention job when the memory was recalled.
    """

    days_by_importance: dict[int, float | None] = field(
        default_factory=lambda: {5: None, 4: 365.0, 3: 180.0, 2: 30.0, 1: 7.0}
    )
    working_days: float = 1.0

    def days_for(self, memory_type: MemoryType, importance: int) -> float | None:
        """The policy lifetime in days of a memory of this type and importance (None = forever)."""
        if memory_type is MemoryType.WORKING:
            return self.working_days
        return self.days_by_importance.get(importance)

    def expires_at(
        self, memory_type: MemoryType, importance: int, ttl_days: float | None, now: datetime
    ) -> datetime | None:
        """When a memory written now should expire."""
        days = ttl_days if ttl_days is not None else self.days_for(memory_type, importance)
        return None if days is None else now + timedelta(days=days)

    def renewal(self, memory: Memory, now: datetime, lookahead: timedelta) -> datetime | None:
        """The renewed `expires_at` of a memory about to expire, or None if it must go.

        Renewed only when its expiry came from this policy (not an explicit `ttl_days`), it is not
        working memory, and it was recalled recently enough that its retention, counted from that
        recall, outlasts the next job run. The renewed expiry is a full retention from `now`.
        """
        days = self.days_for(memory.type, memory.importance)
        if memory.type is MemoryType.WORKING or days is None or memory.expires_at is None:
            return None
        retention = timedelta(days=days)
        policy_derived = abs(memory.expires_at - memory.updated_at - retention) <= RENEWAL_TOLERANCE
        recalled = memory.last_accessed_at > memory.updated_at
        if policy_derived and recalled and memory.last_accessed_at + retention > now + lookahead:
            return now + retention
        return None


@dataclass(frozen=True, slots=True)
class ReinforcementPolicy:
    """Strength starts at 1.0, rises by `recall_boost` per relevant recall (up to `max_strength`)."""

    initial_strength: float = 1.0
    recall_boost: float = 0.1
    min_relevance: float = 0.5
    """A search hit is reinforced only when its fused relevance (`service/search/ranking.py`: 1 = the best
    candidate in both channels) reaches this: the best keyword match, or a strong standing in both
    channels. On LoCoMo, reinforcing every top-10 hit lowered R@10 (0.649 -> 0.627, RRF); with this
    floor the replay loses nothing (benchmarks/README.md)."""
    merge_boost: float = 0.2
    max_strength: float = 2.0

    def reinforced(self, strength: float, boost: float) -> float:
        """Strength after one reinforcement, bounded by `max_strength`."""
        return min(self.max_strength, strength + boost)


@dataclass(frozen=True, slots=True)
class DecayPolicy:
    """Exponential decay of strength with time unused; half-life grows with importance.

    A never-recalled memory (strength 1.0) falls below `archive_threshold` after
    `log2(1 / archive_threshold)` half-lives: about 3.3 (23, 46, 100, 199, 299 days by importance).
    """

    half_life_days: dict[int, float] = field(
        default_factory=lambda: {1: 7.0, 2: 14.0, 3: 30.0, 4: 60.0, 5: 90.0}
    )
    archive_threshold: float = 0.1
    protected_importance: int = 5
    """Memories of this importance or above are never archived for fading."""

    def half_life(self, importance: int) -> float:
        """Half-life in days for this importance (the nearest defined one below, else the smallest)."""
        known = sorted(self.half_life_days)
        eligible = [i for i in known if i <= importance]
        return self.half_life_days[eligible[-1] if eligible else known[0]]

    def strength_at(
        self, strength: float, importance: int, last_accessed_at: datetime, now: datetime
    ) -> float:
        """The anchored `strength` decayed from `last_accessed_at` to `now` (never grows with time)."""
        days = max(0.0, (now - last_accessed_at).total_seconds() / 86_400)
        return strength * math.exp(-math.log(2) * days / self.half_life(importance))

    def effective(self, memory: Memory, now: datetime) -> float:
        """The memory's strength now: decayed from its last recall, or its last verification if later.

        A verification (`service.verification`) restarts the clock as a recall does, without the
        boost: a verified memory decays no faster than its unverified twin.
        """
        anchor = memory.last_accessed_at
        if memory.verified_at is not None and memory.verified_at > anchor:
            anchor = memory.verified_at
        return self.strength_at(memory.strength, memory.importance, anchor, now)

    def fades_at(self, memory: Memory) -> datetime | None:
        """When the memory's strength falls below the threshold if not recalled again (None: never).

        Recalls only raise strength and move `last_accessed_at` later, so this only moves later.
        """
        if memory.importance >= self.protected_importance:
            return None
        if memory.strength <= self.archive_threshold:
            return memory.last_accessed_at
        days = self.half_life(memory.importance) * math.log2(memory.strength / self.archive_threshold)
        return memory.last_accessed_at + timedelta(days=days)

    def fingerprint(self) -> str:
        """What `fades_at` depends on, as text: a due order built with another one must be rebuilt."""
        lives = ",".join(f"{k}:{v!r}" for k, v in sorted(self.half_life_days.items()))
        return f"decay-v1;{lives};{self.archive_threshold!r};{self.protected_importance}"

    def fades(self, memory: Memory, now: datetime) -> bool:
        """True when the memory is weak enough to archive (never for protected importance)."""
        return memory.importance < self.protected_importance and self.effective(memory, now) < (
            self.archive_threshold
        )


@dataclass(frozen=True, slots=True)
class TenantPolicy:
    """The retention and decay one tenant lives by."""

    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    decay: DecayPolicy = field(default_factory=DecayPolicy)


DEFAULT_RETENTION = RetentionPolicy()
DEFAULT_REINFORCEMENT = ReinforcementPolicy()
DEFAULT_DECAY = DecayPolicy()


def policy_for(
    tenant_id: str, overrides: Mapping[str, TenantPolicy], retention: RetentionPolicy, decay: DecayPolicy
) -> TenantPolicy:
    """The tenant's own policy if it has one, else the defaults given."""
    return overrides.get(tenant_id) or TenantPolicy(retention, decay)

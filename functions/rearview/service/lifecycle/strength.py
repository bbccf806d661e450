"""A memory's strength anchors over time: what its strength-over-time chart is drawn from.

Strength is stored anchored (`service.policy`): the value at `last_accessed_at`, decaying from
there. A history event that *sets* the strength is an anchor at its time: the creation, and any
event whose `after` strength differs from its `before` (a merge, a restore from the archive). Other
events (an update, a forget) carry the anchor over unchanged and are not anchors. Recalls are not
events (they only touch the record), so the latest recall shows as a final anchor at
`last_accessed_at` when it is newer than the last one. Between anchors the strength decays by
`DecayPolicy.strength_at`; at an anchor it jumps (reinforcement).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from rearview.models import HistoryAction, HistoryEvent, Memory


@dataclass(frozen=True, slots=True)
class StrengthPoint:
    """The anchored strength at `at` (it decays from there), the importance then, and what set it."""

    at: datetime
    strength: float
    importance: int
    label: str


def strength_points(memory: Memory, events: Sequence[HistoryEvent]) -> list[StrengthPoint]:
    """The anchors of `memory`'s strength, oldest first (see the module docstring)."""
    points: list[StrengthPoint] = []
    for event in events:
        after, before = event.after or {}, event.before or {}
        value = after.get("strength")
        sets = event.action is HistoryAction.CREATED or value != before.get("strength", value)
        if sets and isinstance(value, int | float) and not isinstance(value, bool):
            importance = after.get("importance", memory.importance)
            points.append(
                StrengthPoint(
                    event.at,
                    float(value),
                    importance if isinstance(importance, int) else memory.importance,
                    event.action.value,
                )
            )
    if not points or memory.last_accessed_at > points[-1].at:
        points.append(StrengthPoint(memory.last_accessed_at, memory.strength, memory.importance, "recalled"))
    return points

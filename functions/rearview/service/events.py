"""History events: the audited snapshot of a memory and the event that explains a change to it."""

from __future__ import annotations

from datetime import datetime

from rearview.ids import new_id
from rearview.models import HistoryAction, HistoryEvent, Memory

_AUDIT_FIELDS = (
    "content", "type", "status", "tags", "entities", "metadata", "importance", "confidence",
    "strength", "event_time", "expires_at", "superseded_by", "version", "visibility", "session_id",
)  # fmt: skip


def snapshot(memory: Memory | None) -> dict[str, object] | None:
    """The audited fields of a memory, JSON-ready, for history before/after."""
    if memory is None:
        return None
    return memory.model_dump(mode="json", include=set(_AUDIT_FIELDS))


def history_event(
    memory: Memory,
    action: HistoryAction,
    before: Memory | None,
    now: datetime,
    actor: str | None = None,
    note: str | None = None,
) -> HistoryEvent:
    """The event recording that `before` became `memory` at `now`; `actor` defaults to its agent."""
    return HistoryEvent(
        id=new_id(now),
        tenant_id=memory.tenant_id,
        memory_id=memory.id,
        action=action,
        at=now,
        actor=actor or memory.agent_id,
        before=snapshot(before),
        after=snapshot(memory),
        note=note,
    )

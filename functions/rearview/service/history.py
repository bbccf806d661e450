"""How a change to a memory is recorded: its history event.

Every writer of the store (the service's tools, the lifecycle jobs, archival) builds its
`HistoryEvent`s here, so an event always has the same shape: a fresh time-ordered id, the
memory's tenant and id, and `before`/`after` as JSON-ready dicts. `change_event` is the usual
case, where both sides are the audited fields (`AUDIT_FIELDS`) of a memory.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rearview.models import HistoryAction, HistoryEvent, Memory
from rearview.shared.ids import new_id

AUDIT_FIELDS = (
    "content", "type", "status", "tags", "entities", "metadata", "importance", "confidence",
    "strength", "event_time", "expires_at", "superseded_by", "version", "visibility", "session_id",
    "agent_id", "source", "speaker", "cues", "verified_at", "verified_by",
)  # fmt: skip
"""The fields of a memory that history records before and after a change (its writer included: an
edit by another agent moves authorship, and the history keeps who wrote each text)."""


def snapshot(memory: Memory | None) -> dict[str, object] | None:
    """The audited fields of a memory, JSON-ready, for history before/after (None for None)."""
    if memory is None:
        return None
    return memory.model_dump(mode="json", include=set(AUDIT_FIELDS))


def history_event(
    memory: Memory,
    action: HistoryAction,
    now: datetime,
    *,
    actor: str | None,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    note: str | None = None,
) -> HistoryEvent:
    """The event recording `action` on `memory` at `now`, with `before`/`after` as given."""
    return HistoryEvent(
        id=new_id(now),
        tenant_id=memory.tenant_id,
        memory_id=memory.id,
        action=action,
        at=now,
        actor=actor,
        before=before,
        after=after,
        note=note,
    )


def change_event(
    memory: Memory,
    action: HistoryAction,
    before: Memory | None,
    now: datetime,
    actor: str | None = None,
    note: str | None = None,
) -> HistoryEvent:
    """The event that turned `before` (None: nothing, a creation) into `memory`.

    Both sides are snapshots of the audited fields; `actor` defaults to the memory's agent.
    """
    return history_event(
        memory,
        action,
        now,
        actor=actor or memory.agent_id,
        before=snapshot(before),
        after=snapshot(memory),
        note=note,
    )

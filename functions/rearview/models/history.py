"""A memory's history: the append-only events of its changes, and `memory_history`'s answer."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from rearview.models.memory import MemoryView


class HistoryAction(StrEnum):
    """Why a history event was appended."""

    CREATED = "created"
    MERGED = "merged"
    UPDATED = "updated"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"
    ARCHIVED = "archived"
    RESTORED = "restored"
    VERIFIED = "verified"


class HistoryEvent(BaseModel):
    """One append-only change to a memory: what it was before, what it became, and why."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    tenant_id: str
    memory_id: str
    action: HistoryAction
    at: datetime
    actor: str | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    note: str | None = None


class HistoryResult(BaseModel):
    """Output of `memory_history`: the memory (if it still exists) and its events, oldest first."""

    model_config = ConfigDict(defer_build=True)

    memory_id: str
    memory: MemoryView | None
    events: list[HistoryEvent]

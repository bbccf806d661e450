"""Test data builders shared by every test tier (no fixtures here: plain functions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from rearview.ids import new_id
from rearview.models import HistoryAction, HistoryEvent, Memory, MemoryStatus, MemoryType, Visibility
from rearview.ports import StoreWrite, Vector
from rearview.text import content_hash

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def make_memory(
    content: str = "User prefers tea",
    *,
    tenant_id: str = "t1",
    memory_id: str | None = None,
    type: MemoryType = MemoryType.SEMANTIC,
    agent_id: str = "default",
    visibility: Visibility = Visibility.SHARED,
    session_id: str | None = None,
    tags: list[str] | None = None,
    status: MemoryStatus = MemoryStatus.ACTIVE,
    at: datetime = T0,
    event_time: datetime | None = None,
    expires_at: datetime | None = None,
    scope_key: str = "semantic/shared/*/*",
    importance: int = 3,
    version: int = 1,
) -> Memory:
    """A valid Memory with sensible defaults."""
    return Memory(
        id=memory_id or new_id(at),
        tenant_id=tenant_id,
        type=type,
        content=content,
        agent_id=agent_id,
        session_id=session_id,
        visibility=visibility,
        tags=tags or [],
        importance=importance,
        created_at=at,
        updated_at=at,
        last_accessed_at=at,
        event_time=event_time or at,
        expires_at=expires_at,
        status=status,
        content_hash=content_hash(content),
        scope_key=scope_key,
        version=version,
        embedding_model="hashing:256",
    )


def created(memory: Memory) -> StoreWrite:
    """An insert of `memory` with its `created` event."""
    event = HistoryEvent(
        id=new_id(memory.created_at), tenant_id=memory.tenant_id, memory_id=memory.id,
        action=HistoryAction.CREATED, at=memory.created_at, after={"content": memory.content},
    )  # fmt: skip
    return StoreWrite(memory, event, None)


def unit_vector(seed: int, dimension: int = 32) -> Vector:
    """A deterministic random unit vector."""
    v = np.random.default_rng(seed).normal(size=dimension).astype(np.float32)
    return v / np.linalg.norm(v)


def minutes(n: int) -> timedelta:
    return timedelta(minutes=n)

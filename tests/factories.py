"""Test data builders shared by every test tier (no fixtures here: plain functions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from rearview.backends.memory import InMemoryMemoryIndex
from rearview.models import HistoryAction, HistoryEvent, Memory, MemoryStatus, MemoryType, Visibility
from rearview.ports import IndexDocument, StoreWrite, Vector
from rearview.service.search.candidates import Candidates
from rearview.shared.ids import new_id
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


def varied_memories(n: int = 40, *, tenant_id: str = "t1") -> list[Memory]:
    """`n` memories that spread over every filterable field, for "filters match the reference" tests.

    Row `i` has type `i % 4`, agent `agent{i % 3}`, private when odd, session `s{i % 5}`, tag `x`
    when `i % 2 == 0`, `y` when `i % 3 == 0`, `z` when `i % 4 == 0`, is superseded when
    `i % 7 == 0`, scope `scope{i % 2}`; it was created at `T0 + i` minutes but happened at
    `T0 + (100 - i)` minutes, so an event-time filter cannot pass by reading the creation time.
    Every content holds the words "shared words" (for keyword search) and is unique.
    """
    return [
        make_memory(
            f"shared words memory {i}",
            tenant_id=tenant_id,
            memory_id=f"m{i:02d}",
            type=list(MemoryType)[i % 4],
            agent_id=f"agent{i % 3}",
            visibility=Visibility.PRIVATE if i % 2 else Visibility.SHARED,
            session_id=f"s{i % 5}",
            tags=[t for t in ("x", "y", "z") if i % (2 + "xyz".index(t)) == 0],
            status=MemoryStatus.SUPERSEDED if i % 7 == 0 else MemoryStatus.ACTIVE,
            at=T0 + minutes(i),
            event_time=T0 + minutes(100 - i),
            scope_key=f"scope{i % 2}",
        )
        for i in range(n)
    ]


def created(memory: Memory) -> StoreWrite:
    """An insert of `memory` with its `created` event."""
    event = HistoryEvent(
        id=new_id(memory.created_at),
        tenant_id=memory.tenant_id,
        memory_id=memory.id,
        action=HistoryAction.CREATED,
        at=memory.created_at,
        after={"content": memory.content},
    )
    return StoreWrite(memory, event, None)


def unit_vector(seed: int, dimension: int = 32) -> Vector:
    """A deterministic random unit vector."""
    v = np.random.default_rng(seed).normal(size=dimension).astype(np.float32)
    return v / np.linalg.norm(v)


def minutes(n: int) -> timedelta:
    return timedelta(minutes=n)


def package_manager_candidates(**kwargs: object) -> Candidates:
    """A search's candidates for "Which package manager does the user use?": the pnpm memory (the
    answer, strong on both channels) and an unrelated one; `kwargs` replace any field."""
    at = datetime(2026, 12, 1, 12, tzinfo=UTC)
    pnpm = make_memory("The user uses pnpm as the package manager.", memory_id="pnpm", at=at)
    cat = make_memory("The user's cat is called Mochi.", memory_id="cat", at=at)
    base: dict[str, object] = {
        "query": "Which package manager does the user use?",
        "now": at,
        "memories": {"pnpm": pnpm, "cat": cat},
        "keyword": [("pnpm", 5.0), ("cat", 0.4)],
        "vector": [("pnpm", 0.91), ("cat", 0.82)],
        "keyword_ceiling": 6.0,
        "vector_baselines": (0.8, 0.78),
    }
    return Candidates(**{**base, **kwargs})  # type: ignore[arg-type]


class RecordingIndex(InMemoryMemoryIndex):
    """The in-memory index, keeping every document it was given (`docs`) and each upsert's contents."""

    def __init__(self, dimension: int = 256) -> None:
        super().__init__(dimension)
        self.docs: list[IndexDocument] = []
        self.upserts: list[list[str]] = []

    def upsert(self, docs: list[IndexDocument]) -> None:  # type: ignore[override]
        self.docs.extend(docs)
        self.upserts.append([d.memory.content for d in docs])
        super().upsert(docs)

    def last(self, content: str) -> IndexDocument:
        """The last document given for the memory holding `content`."""
        return [d for d in self.docs if d.memory.content == content][-1]

"""What a write means and what it commits: the decision `Writer.decide` returns and the data around it.

`WriteDecision` is `Merge`, `Supersede` or `Create`; each is decided on a `Draft` (the validated
request, stamped and embedded) and applied as `Changes`, the records one write commits atomically
with the index documents that follow them. Plain data: deciding reads, applying writes, both in
`writer`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from rearview.models import (
    HistoryAction,
    Memory,
    MemoryStatus,
    WriteRequest,
)
from rearview.ports import IndexDocument, StoreWrite, Vector
from rearview.service.history import change_event
from rearview.service.write.conflicts import Conflict
from rearview.service.write.duplicates import Corroboration


@dataclass(frozen=True, slots=True)
class Merge:
    """Fold the write into `into`, its writer's own active exact (similarity 1.0) or near duplicate.

    `retires` is the caller's `supersedes` target, retired in favour of `into` in the same commit.
    """

    into: Memory
    similarity: float
    retires: Memory | None = None


@dataclass(frozen=True, slots=True)
class Supersede:
    """Create a new memory and retire `retired` (kept, `superseded_by` set) in the same commit.

    `reason` says why when it was not the caller's `supersedes` (a judged contradiction);
    `corroborates` is another agent's duplicate that the new memory corroborates (`Create`).
    """

    retired: Memory
    reason: str | None = None
    corroborates: Corroboration | None = None


@dataclass(frozen=True, slots=True)
class Create:
    """Create a new memory; nothing else changes.

    `differs_from` is a near duplicate the write was NOT merged into because a merge would lose
    a fact (`merge_safety`): the new memory is linked to it (history note, `WriteResult`).
    `corroborates` is another agent's duplicate: the new memory is the writer's own copy of the
    fact, linked to it (`duplicates`), so neither agent's edit or erasure changes the other's.
    `conflict` is an older memory the write states another value for (`conflicts`): it is marked
    `contested_by` the new memory in the same commit, and named in the result.
    """

    differs_from: Memory | None = None
    difference: str | None = None
    corroborates: Corroboration | None = None
    conflict: Conflict | None = None


WriteDecision = Merge | Supersede | Create


@dataclass(frozen=True, slots=True)
class Draft:
    """A validated write and what deciding and applying it need: its time, dedup scope, hash and vector."""

    req: WriteRequest
    now: datetime
    scope_key: str
    digest: str
    vector: Vector | None
    """None when the embedder failed: the memory is stored unindexed."""
    cue_vectors: Vector | None = None
    """The request's cues embedded with its content (one row each); None without cues."""
    part_vectors: Vector | None = None
    """The content's parts embedded (`IndexDocument.part_vectors`); None without parts."""
    born: datetime | None = None
    """A new memory's creation time when the request gives one (`created_at`, an import): else `now`."""


@dataclass(frozen=True, slots=True)
class Embedded:
    """A write's content as its caller embedded it, with many others in one embedder call.

    `vector` is None when that call failed: the memory is stored unindexed, not embedded again.
    `parts` are its parts' vectors from the same call (`rearview.text.parts.content_parts`; None: it
    has none).
    """

    vector: Vector | None
    parts: Vector | None = None


@dataclass(slots=True)
class Changes:
    """The records one write commits atomically, and the index documents that follow them."""

    writes: list[StoreWrite] = field(default_factory=list)
    index_docs: list[IndexDocument] = field(default_factory=list)
    superseded_ids: list[str] = field(default_factory=list)
    contests: list[StoreWrite] = field(default_factory=list)
    """The `contest` marks among `writes`: best-effort, dropped if the marked memory changed meanwhile."""

    def put(
        self,
        write: StoreWrite,
        vector: Vector | None,
        cue_vectors: Vector | None = None,
        part_vectors: Vector | None = None,
    ) -> None:
        self.writes.append(write)
        self.index_docs.append(
            IndexDocument(write.memory, vector, cue_vectors=cue_vectors, part_vectors=part_vectors)
        )

    def contest(self, older: Memory, newer_id: str, now: datetime, actor: str, why: str) -> None:
        """Mark `older` `contested_by` the new `newer_id` (a new version; its text, times and index stay)."""
        after = older.model_copy(
            update={"contested_by": [*older.contested_by, newer_id], "version": older.version + 1}
        )
        event = change_event(
            after, HistoryAction.UPDATED, older, now, actor, note=f"contested by {newer_id}: {why}"
        )
        self.writes.append(StoreWrite(after, event, older.version))
        self.contests.append(self.writes[-1])

    def retire(
        self, retired: Memory, successor_id: str, now: datetime, actor: str, reason: str | None
    ) -> None:
        after = retired.model_copy(
            update={
                "status": MemoryStatus.SUPERSEDED,
                "superseded_by": successor_id,
                "updated_at": now,
                "version": retired.version + 1,
            }
        )
        note = f"superseded by {successor_id}" + (f" ({reason})" if reason else "")
        event = change_event(after, HistoryAction.SUPERSEDED, retired, now, actor, note=note)
        self.put(StoreWrite(after, event, retired.version), None)
        self.superseded_ids.append(retired.id)

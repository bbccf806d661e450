"""The store port: the source of truth for memories and their history.

Beside it, the lifecycle's cold storage (`Archive`) and its jobs' progress (`CheckpointStore`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from rearview.models import HistoryEvent, Memory, MemoryFilter, Page, StoreStats

DueJob = Literal["decay", "archive"]
"""The lifecycle jobs a store keeps a due order for (`MemoryStore.list_due`)."""


@dataclass(frozen=True, slots=True)
class DueAt:
    """When a memory, as of `version`, is next due for decay (`MemoryStore.schedule`); None: never.

    `expires_at` is the memory's own (as of `version`): a store that keys its archive order apart
    from the record (DynamoDB) re-keys it, so a record written before that order existed joins it.
    """

    memory_id: str
    version: int
    due: datetime | None
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class StoreWrite:
    """One memory to put, guarded by version, plus the history event that explains it.

    `expected_version=None` means the memory must not exist yet (an insert).
    """

    memory: Memory
    event: HistoryEvent | None
    expected_version: int | None


@dataclass(frozen=True, slots=True)
class Touch:
    """A recall bookkeeping update that bumps no version and writes no history."""

    memory_id: str
    strength: float
    last_accessed_at: datetime
    access_count: int

    def is_after(self, last_accessed_at: datetime, access_count: int) -> bool:
        """Whether this recall comes after the one a memory holds (by time, then count).

        Only then does a store apply it, so a late touch never moves a memory's recall back.
        """
        return (self.last_accessed_at, self.access_count) > (last_accessed_at, access_count)


MAX_WRITES_PER_COMMIT = 19
"""The most `StoreWrite`s one `MemoryStore.commit` is guaranteed to accept: creates, merges,
retirements and deletions (not content changes, which move lookup keys). Sized for DynamoDB, whose
transaction takes at most 100 actions: such a change takes up to five (record, history event, due
item, hash lookup, idempotency key) and a tenant's first commit one more (its registry entry): 19 x 5 + 1.
A caller with more commits them in chunks of this size; then only each chunk is atomic."""


class MemoryStore(Protocol):
    """The source of truth for memories and their history."""

    def ensure_schema(self) -> None:
        """Create tables/indexes if missing. Idempotent; never called from a constructor."""

    def commit(self, writes: Sequence[StoreWrite]) -> None:
        """Apply all writes atomically: all land or none (ConflictError on a version mismatch).

        `MAX_WRITES_PER_COMMIT` writes (of the kinds it names) are guaranteed to fit; a backend may
        refuse more (InvalidInputError, before anything is written).
        """

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        """The memory, or None if absent or expired."""

    def get_many(self, tenant_id: str, memory_ids: Sequence[str], *, recalls: bool = True) -> list[Memory]:
        """The memories that exist and have not expired, in no particular order.

        `recalls=False`: a caller that needs no recall bookkeeping (strength, last recall, recall
        count) may get those fields as of the memory's last commit; a store that keeps recalls
        apart (DynamoDB) then does not read them.
        """

    def list_expired(self, tenant_id: str, limit: int = 100) -> list[Memory]:
        """Records past `expires_at` that the store still holds, soonest expired first, at most `limit`.

        Reads treat them as absent; the archive job archives or erases them (`expiry.sweep_expired`),
        so no expired text outlives the job. A store whose own TTL deletes expired records and
        reports each deletion (DynamoDB: TTL + its stream, `LifecycleService.handle_expired`)
        returns [].
        """

    def list_due(
        self, tenant_id: str, job: DueJob, before: datetime, cursor: str | None = None, limit: int = 100
    ) -> Page:
        """Live active or superseded memories due for `job` at or before `before`, soonest first, paged.

        A lifecycle run reads these instead of the whole tenant. Due for `archive`: `expires_at`
        (unexpired, at most `before`). Due for `decay`: the time `schedule` last set, or, for a
        memory written (committed) since, its `updated_at`: every write is examined once. A
        memory is never due for decay before the store was told (`schedule`); recalls (`touch`)
        leave the due time as it is (they only postpone fading, so the job re-schedules it).
        The cursor resumes after the last item's position, so items the job moves later or
        archives meanwhile are neither repeated nor skipped.
        """

    def schedule(self, tenant_id: str, entries: Sequence[DueAt]) -> None:
        """Set when each memory is next due for `decay` (None: never), if it is still at its `version`.

        No new version, no history; a memory changed since (or gone) is left alone: its commit
        made it due again.
        """

    def find_by_hash(
        self, tenant_id: str, scope_key: str, content_hash: str, agent_id: str | None = None
    ) -> Memory | None:
        """The active memory with this content hash in this dedup scope, if any.

        With `agent_id`, only a memory that agent wrote: a write merges only into its own writer's
        duplicate (another agent's copy is corroborated, never merged into: `Writer.decide`).
        """

    def find_by_idempotency_key(self, tenant_id: str, key: str) -> Memory | None:
        """The memory first written with this idempotency key, if any."""

    def find_by_idempotency_keys(self, tenant_id: str, keys: Sequence[str]) -> dict[str, Memory]:
        """`find_by_idempotency_key` for many keys in a few requests: key -> memory, where there is one."""

    def list_memories(
        self,
        tenant_id: str,
        filter: MemoryFilter,
        cursor: str | None = None,
        limit: int = 100,
        *,
        oldest_first: bool = False,
    ) -> Page:
        """Memories matching `filter`, newest `updated_at` first (or oldest first), one page at a time.

        A cursor resumes the listing it came from, in that listing's order.
        """

    def history(self, tenant_id: str, memory_id: str) -> list[HistoryEvent]:
        """The memory's events, oldest first (empty once hard-deleted)."""

    def touch(self, tenant_id: str, touches: Sequence[Touch]) -> None:
        """Record recalls (strength, last access) without a new version; best effort.

        A touch that is not `Touch.is_after` the recall the memory holds changes nothing; a touch
        of a memory that does not exist is skipped, never re-creating anything of it.
        """

    def purge(self, tenant_id: str, memory_id: str) -> None:
        """Hard delete: the memory, its history and its lookup keys. Idempotent."""

    def derived_ids(self, tenant_id: str, source_id: str) -> list[str]:
        """Every memory committed with `source_id` in its `derived_from` (its lineage), in no order.

        `commit` records the lineage no later than the memory lands, so a derived memory is always
        found from each of its sources, however many memories came since (erasure relies on it).
        An id may name a memory since purged, or one that no longer names `source_id`: check it.
        Purging a memory forgets its lineage both ways (as a source and as a derived memory).
        """

    def rewrite_history(self, tenant_id: str, memory_id: str, events: Sequence[HistoryEvent]) -> None:
        """Replace the memory's history events that have these ids by these (an erasure redacts them).

        Only an event's body changes (its id and place in the history stay); ids the memory has no
        event for are ignored. Idempotent.
        """

    def stats(self, tenant_id: str) -> StoreStats:
        """Counts by type and status for one tenant."""

    def tenants(self) -> list[str]:
        """Every tenant that has written a memory (for operators: reindex, lifecycle jobs)."""


class Archive(Protocol):
    """Cold storage for archived memories (with their history)."""

    def put(self, tenant_id: str, items: Sequence[tuple[Memory, Sequence[HistoryEvent]]]) -> str:
        """Store a batch of archived memories (with history) as one object; returns its reference."""

    def get(self, tenant_id: str, ref: str, memory_id: str) -> tuple[Memory, list[HistoryEvent]]:
        """The archived memory and its history (NotFoundError if absent)."""

    def delete(self, tenant_id: str, ref: str, memory_id: str) -> None:
        """Remove an archived memory. Idempotent."""

    def iter_refs(self, tenant_id: str) -> Iterator[str]:
        """Every reference held for a tenant (for audits and tests)."""


class CheckpointStore(Protocol):
    """Where a lifecycle job keeps its progress for one tenant, so the next run resumes it.

    The state is opaque text (the job's own JSON). `save` replaces the previous state whole.
    """

    def ensure_schema(self) -> None:
        """Create tables if missing. Idempotent; never called from a constructor."""

    def load(self, tenant_id: str, job: str) -> str | None:
        """The state last saved for (tenant, job), or None."""

    def save(self, tenant_id: str, job: str, state: str) -> None:
        """Replace the state for (tenant, job)."""

    def delete(self, tenant_id: str, job: str) -> None:
        """Forget the state for (tenant, job). Idempotent."""

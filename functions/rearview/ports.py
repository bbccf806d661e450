"""The ports: small protocols the service depends on. Adapters live in `backends/` and `embedders/`.

Every method takes the tenant explicitly; no adapter may return another tenant's data.
Adapters raise only `rearview.errors` types (translated at their boundary).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, runtime_checkable

from rearview.models import HistoryEvent, Memory, MemoryFilter, Page, StoreStats
from rearview.shared.clock import Clock

if TYPE_CHECKING:  # numpy loads where a vector is computed, not in every process's init
    import numpy as np
    import numpy.typing as npt

Vector: TypeAlias = "npt.NDArray[np.float32]"
"""An L2-normalized float32 embedding (1-D), or a (n, dim) matrix of them; never the zero vector."""

__all__ = [
    "Archive",
    "ChannelHits",
    "CheckpointStore",
    "Completion",
    "CONTEXT_WEIGHT",
    "CUE_WEIGHT",
    "Clock",
    "DueAt",
    "DueJob",
    "Embedder",
    "IndexDocument",
    "IndexQuery",
    "IndexedVersions",
    "MAX_VERSIONS_PAGE",
    "LanguageModel",
    "MAX_WRITES_PER_COMMIT",
    "MemoryIndex",
    "MemoryStore",
    "StoreWrite",
    "Touch",
    "Vector",
    "VersionedIndex",
]


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


CONTEXT_WEIGHT = 0.6
"""How much a query word found only in a document's `context` counts, relative to its own text.

Every index applies it the same way (FTS5 column weight, BM25 term-frequency weight, OpenSearch
field boost). Here, in the port, because it is part of what every index promises and the
backends may not import the service. 0.6 (with three neighbours each side, see
`service/keyword_context.py`) was chosen by cross-validated recall on LoCoMo and keeps a set of
independent facts written back to back as well ranked as without context
(benchmarks/recall/facts_recall.py)."""


CUE_WEIGHT = 0.8
"""How much a query word found only in a memory's recall cues (`Memory.cues`) counts, relative to its
own text: every index applies it as it applies `CONTEXT_WEIGHT`. A cue is the writer's guess at how
the memory will be asked for, so it counts more than the neighbours' context and less than the
content itself (benchmarks/recall/everyday_recall.py --help-mode both)."""


@dataclass(frozen=True, slots=True)
class IndexDocument:
    """What the index keeps of a memory: the filterable fields, the text and the vector.

    `context` is extra text the keyword channel also matches, at `CONTEXT_WEIGHT` relative to the
    memory's content (its date in words and its session neighbours: `service.keyword_context`).
    It is never embedded, returned or shown. None means "no context" for a document written with
    its vector, and "keep the indexed context" for a vector-less update; a vector-less update
    with a context replaces only the context (the content and vector stay together).
    """

    memory: Memory
    vector: Vector | None
    context: str | None = field(default=None, kw_only=True)
    cue_vectors: Vector | None = field(default=None, kw_only=True)
    """A (len(memory.cues), dim) matrix: row i is `memory.cues[i].text` embedded as a document.

    With `vector`: the document's vectors are these (None: the memory has no cue vectors). Without
    `vector`: given, they replace the indexed cues (text and vectors) and keep the content's vector,
    under the same conditions as a vector-less update; None keeps the indexed cues."""

    @property
    def cue_text(self) -> str:
        """The memory's recall cues as the keyword channel indexes them: one field, a cue a line."""
        return "\n".join(c.text for c in self.memory.cues)

    def __post_init__(self) -> None:
        if self.cue_vectors is not None and len(self.cue_vectors) != len(self.memory.cues):
            raise ValueError(f"cue_vectors has {len(self.cue_vectors)} rows for {len(self.memory.cues)} cues")


@dataclass(frozen=True, slots=True)
class IndexQuery:
    """One hybrid query: each channel filtered by tenant and `filter` inside the query.

    `text=None` skips the keyword channel, `vector=None` skips the vector channel.
    """

    tenant_id: str
    filter: MemoryFilter
    limit: int
    text: str | None = None
    vector: Vector | None = None
    match_cues: bool = True
    """Whether a memory's cue vectors count in the vector channel (its cosine the best of content and
    cues); False compares content alone (dedup). The keyword channel always counts the cues' words
    at `CUE_WEIGHT`: no caller compares text alone."""


@dataclass(frozen=True, slots=True)
class ChannelHits:
    """Ranked (memory_id, score) lists, best first, one per channel.

    Keyword scores are BM25 (higher is better, unbounded); vector scores are cosine similarity
    in [-1, 1], whatever the engine reports natively.
    """

    keyword: list[tuple[str, float]] = field(default_factory=list)
    vector: list[tuple[str, float]] = field(default_factory=list)
    """Each memory's best cosine over its content and (with `match_cues`) its cues."""
    keyword_ceiling: float = 0.0
    """The query's BM25 scale: the sum of its phrases' IDF under the statistics the keyword scores
    were computed with, i.e. what an average-length document holding every query phrase once scores
    (`rearview.text.bm25.CorpusStats.ceiling`). Ranking divides by it, so a keyword score means the same
    on 5 candidates as on 500; 0 when unknown (ranking then falls back to the best candidate)."""
    vector_cues: dict[str, int] = field(default_factory=dict)
    """memory_id -> the index in `Memory.cues` of the cue that carried its vector score; absent
    when the content did."""


@dataclass(frozen=True, slots=True)
class IndexedVersions:
    """One page of `MemoryIndex.versions`: (memory_id, version) pairs, memory id ascending.

    `cursor` continues the listing after this page; None on the last page.
    """

    items: list[tuple[str, int]]
    cursor: str | None = None


MAX_VERSIONS_PAGE = 10_000
"""The largest `limit` of one `MemoryIndex.versions` page."""


class MemoryIndex(Protocol):
    """Derived search structure (BM25 + k-NN); can always be rebuilt from the store.

    Every document records the `version` of the memory it was written from, and writes are
    conditional on it: a document never replaces one of a newer version (concurrent writers of
    one memory may land in any order; the newest version wins).
    """

    def ensure_schema(self) -> None:
        """Create the index if missing. Idempotent; never called from a constructor."""

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        """Insert or replace documents by memory id, unless the indexed one holds a newer version.

        A document whose memory version is lower than the indexed document's is skipped (not an
        error); an equal version replaces it (re-embedding, reindex). A document whose `vector`
        is None updates only the filterable fields (status, tags, ...), the version and, when
        given, the `context` of an existing document and keeps its vector and text; it is
        ignored if the document is absent, newer, or indexed with other content (`content_hash`):
        the text must arrive with its vector (a context is not content: it may come alone).
        Engines that keep deletion versions (OpenSearch, `index.gc_deletes`) may refuse, for a
        while, a memory deleted and written again without a new version.
        """

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Remove documents; unknown ids are ignored.

        Their text may stay in the engine's files until it compacts them (soft forget, archive,
        supersede: the store keeps the memory anyway); `erase` is for when it must not.
        """

    def erase(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """`delete`, and no copy of the text left in the engine's files once it returns (hard forget).

        Embedded indexes rewrite their segments and truncate their write-ahead log (costly: one
        call per hard forget, not per delete); engines such as OpenSearch delete the document and
        drop its bytes when the segments holding it are merged (docs/lifecycle.md).
        """

    def search(self, query: IndexQuery) -> ChannelHits:
        """Run the requested channels; raises IndexUnavailableError when the engine cannot answer."""

    def count(self, tenant_id: str) -> int:
        """Number of documents for a tenant."""

    def versions(self, tenant_id: str, cursor: str | None = None, limit: int = 1000) -> IndexedVersions:
        """The tenant's documents as (memory_id, version), memory id ascending, one page at a time.

        For reconcile: a memory whose indexed version is below the store's is stale. Each memory
        id appears once (where an engine holds several copies, with the lowest version); a
        document written before versions were indexed reports 0. `cursor` is None or the cursor
        of the previous page (InvalidInputError otherwise); `limit` is 1..`MAX_VERSIONS_PAGE`
        (InvalidInputError otherwise). Documents written between pages may be missed or seen.
        """


@runtime_checkable
class VersionedIndex(MemoryIndex, Protocol):
    """An index that can be rebuilt beside the live one and swapped in atomically (an alias).

    `rearview reindex` fills a new version while searches keep using the old one, then switches.
    """

    def current_version(self) -> int | None:
        """The version searches use now (None before `ensure_schema`)."""

    def create_version(self, version: int) -> str:
        """Create an empty index for `version` (idempotent); returns its name."""

    def upsert_into(self, version: int, docs: Sequence[IndexDocument]) -> None:
        """Write documents into `version` directly, whatever the alias points at."""

    def switch_alias(self, version: int) -> None:
        """Atomically make `version` the one searches use."""


class Embedder(Protocol):
    """Turns text into L2-normalized vectors of a fixed dimension, in one named vector space."""

    @property
    def model_id(self) -> str:
        """Stable name of the vector space (model + dimension); recorded on every memory."""

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        """A (len(texts), dimension) matrix for texts to be stored."""

    def embed_query(self, text: str) -> Vector:
        """A (dimension,) vector for a search query."""


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


@dataclass(frozen=True, slots=True)
class Completion:
    """A language model's answer and why it stopped (Converse `stopReason`, e.g. `end_turn`)."""

    text: str
    stop_reason: str

    @property
    def truncated(self) -> bool:
        """The answer was cut off at the token limit (`max_tokens`): its end is missing."""
        return self.stop_reason == "max_tokens"


class LanguageModel(Protocol):
    """A chat model that answers one prompt with text (consolidation, contradiction checks, ingest)."""

    @property
    def model_id(self) -> str:
        """Which model answers (recorded in what it produced)."""

    def complete(self, system: str, prompt: str, max_tokens: int) -> str:
        """The model's answer to `prompt` under the `system` instructions; BackendError on failure."""

    def answer(self, system: str, prompt: str, max_tokens: int) -> Completion:
        """`complete`, with the stop reason: a caller that needs the whole answer checks `truncated`."""

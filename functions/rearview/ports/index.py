"""The index port: keyword and vector recall over what the store holds, and the embedder it searches by.

The index is derived data: rebuilt from the store (`reindex`), never the truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from rearview.models import Memory, MemoryFilter

if TYPE_CHECKING:  # numpy loads where a vector is computed, not in every process's init
    import numpy as np
    import numpy.typing as npt

Vector: TypeAlias = "npt.NDArray[np.float32]"
"""An L2-normalized float32 embedding (1-D), or a (n, dim) matrix of them; never the zero vector."""


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
    part_vectors: Vector | None = field(default=None, kw_only=True)
    """A (n, dim) matrix: the content's parts (`rearview.text.parts.content_parts`), each embedded as a
    document. They follow the content's `vector`: with it, the document's part vectors are these (None:
    none); without it, the indexed parts stay (the content did not change). Never returned or shown."""

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
    """Whether a memory's cue and part vectors count in the vector channel (its cosine the best of
    content, cues and parts); False compares the whole content alone (dedup). The keyword channel
    always counts the cues' words at `CUE_WEIGHT`: no caller compares text alone."""


@dataclass(frozen=True, slots=True)
class ChannelHits:
    """Ranked (memory_id, score) lists, best first, one per channel.

    Keyword scores are BM25 (higher is better, unbounded); vector scores are cosine similarity
    in [-1, 1], whatever the engine reports natively.
    """

    keyword: list[tuple[str, float]] = field(default_factory=list)
    vector: list[tuple[str, float]] = field(default_factory=list)
    """Each memory's best cosine over its content and (with `match_cues`) its cues and parts."""
    keyword_ceiling: float = 0.0
    """The query's BM25 scale: the sum of its phrases' IDF under the statistics the keyword scores
    were computed with, i.e. what an average-length document holding every query phrase once scores
    (`rearview.text.bm25.CorpusStats.ceiling`). Ranking divides by it, so a keyword score means the same
    on 5 candidates as on 500; 0 when unknown (ranking then falls back to the best candidate)."""
    vector_cues: dict[str, int] = field(default_factory=dict)
    """memory_id -> the index in `Memory.cues` of the cue that carried its vector score; absent
    when the content (whole or a part) did."""


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


def query_views_of(embedder: Embedder, texts: Sequence[str]) -> Vector:
    """Stored texts embedded as queries (a standalone memory's query view), as document work.

    The embedder wrappers that schedule work (`PriorityEmbedder`, `BatchingEmbedder`,
    `DeferredEmbedder`) have `embed_query_views`: a write's or a reindex's texts take the document
    path there, never the search's queue, lane or query cache. An engine without it embeds them with
    `embed_queries` (or `embed_query` per text): row i is what `embed_query(texts[i])` returns either
    way.
    """
    import numpy as np

    for name in ("embed_query_views", "embed_queries"):
        method = getattr(embedder, name, None)
        if callable(method):
            matrix: Vector = method(list(texts))
            return matrix
    return np.stack([embedder.embed_query(t) for t in texts])

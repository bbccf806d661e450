"""The ports: small protocols the service depends on. Adapters live in `backends/` and `embedders/`.

Every method takes the tenant explicitly; no adapter may return another tenant's data.
Adapters raise only `rearview.errors` types (translated at their boundary).
"""

from rearview.ports.index import (
    CONTEXT_WEIGHT,
    CUE_WEIGHT,
    MAX_VERSIONS_PAGE,
    ChannelHits,
    Embedder,
    IndexDocument,
    IndexedVersions,
    IndexQuery,
    MemoryIndex,
    Vector,
    VersionedIndex,
    query_views_of,
)
from rearview.ports.language import Completion, LanguageModel
from rearview.ports.store import (
    MAX_WRITES_PER_COMMIT,
    Archive,
    CheckpointStore,
    DueAt,
    DueJob,
    MemoryStore,
    StoreWrite,
    Touch,
)
from rearview.shared.clock import Clock

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
    "query_views_of",
]

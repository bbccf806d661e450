"""The memory model: records, history events, filters and the service's requests and results.

Everything here is plain data (pydantic), shared by the service, the adapters and the API. The
requests are valid by construction: their fields are the limit types of `limits.py`, and a value
beyond one is an `InvalidInputError` naming the field and the limit (`ValidRequest`), so the
service never checks a field again. Records and results are not re-checked: they come from the
service or a store.

One module per domain, each operation's request and result beside each other (the tool schemas and
the wire format are generated from them); the limits they are built from are in `limits.py`:

- `memory`: the record (`Memory`, `MemoryView`), its kinds and states, its cues, `MemoryFilter`.
- `history`: the append-only events of a memory's changes, `memory_history`'s answer.
- `write`, `ingest`, `search`: those tools' requests and results.
- `changes`: `memory_update`'s and `memory_forget`'s requests, a forget's receipt.
- `browse`: `memory_stats`' counts and a page of a listing.

Import from here (`from rearview.models import Memory`): this package re-exports every public name,
and the modules' split is not part of the API.

Every model builds its validator on first use (`defer_build=True`): a process, a cold Lambda's init
above all, builds only those it uses (a tool's schema is generated without it).
"""

from __future__ import annotations

from rearview.models.browse import Page, Stats, StoreStats
from rearview.models.changes import ForgetRequest, ForgetResult, UpdateRequest
from rearview.models.history import HistoryAction, HistoryEvent, HistoryResult
from rearview.models.ingest import (
    ExtractionMode,
    IngestMessage,
    IngestRequest,
    IngestResult,
    MessageOutcome,
    RefusedMessage,
)
from rearview.models.memory import (
    DEFAULT_AGENT,
    SERVICE_CUE_AUTHOR,
    Cue,
    Memory,
    MemoryFilter,
    MemorySource,
    MemoryStatus,
    MemoryType,
    MemoryTypes,
    MemoryView,
    MetadataValue,
    Visibility,
    united_cues,
)
from rearview.models.search import Channel, HitExplanation, SearchHit, SearchRequest, SearchResult
from rearview.models.write import Conflicting, WriteAction, WriteRequest, WriteResult

__all__ = [
    "DEFAULT_AGENT",
    "MemoryType",
    "Visibility",
    "MemoryStatus",
    "MemorySource",
    "MetadataValue",
    "SERVICE_CUE_AUTHOR",
    "Cue",
    "united_cues",
    "MemoryTypes",
    "MemoryView",
    "Memory",
    "MemoryFilter",
    "HistoryAction",
    "HistoryEvent",
    "HistoryResult",
    "Conflicting",
    "WriteAction",
    "WriteRequest",
    "WriteResult",
    "IngestMessage",
    "IngestRequest",
    "ExtractionMode",
    "MessageOutcome",
    "RefusedMessage",
    "IngestResult",
    "UpdateRequest",
    "ForgetRequest",
    "ForgetResult",
    "Channel",
    "SearchRequest",
    "HitExplanation",
    "SearchHit",
    "SearchResult",
    "StoreStats",
    "Stats",
    "Page",
]

"""The memory model: records, history events, filters and the service's requests and results.

Everything here is plain data (pydantic), shared by the service, the adapters and the API.
Limits are named constants; breaking one is an `InvalidInputError`, never a truncation.

Over 400 lines on purpose: the limits table and the models it bounds are one contract (the tool
schemas are generated from these types), so a reader sees every field beside its bounds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from rearview.text import disallowed_control_chars, query_tokens, strip_format_chars

# ---------------------------------------------------------------------------------------------------
# The limits: the one table every caller is held to. The MCP tools advertise them in their input
# schemas and refuse what breaks them (`invalid_input` naming the field and the limit); the service
# checks them again (`service/validation.py`) for the CLI, imports and jobs. Each is far below what
# every backend accepts (SQLite's expression depth of 1000 and 32,766 variables, OpenSearch's 1,024
# boolean clauses, DynamoDB's 4 KB filter expressions and 100-item batches), so no backend error
# reaches a caller, and small enough that no single request can hold the index for long.
MAX_CONTENT_CHARS = 4000
"""`content` of a memory (one distilled statement)."""
MAX_QUERY_CHARS = 1000
"""`query` of a search."""
MAX_QUERY_TERMS = 32
"""Distinct search terms in a query (stopwords aside): each one is a posting list to merge."""
MAX_ID_CHARS = 64
"""A memory id (`memory_id`, `supersedes`, `ids` items)."""
MAX_SESSION_ID_CHARS = 128
MAX_AGENT_ID_CHARS = 128
MAX_IDEMPOTENCY_KEY_CHARS = 128
MAX_TAGS = 32
"""Tags (and entities) on a memory, and tags in a filter."""
MAX_LABEL_CHARS = 100
"""One tag, entity or metadata key."""
MAX_METADATA_KEYS = 32
MAX_METADATA_VALUE_CHARS = 500
MAX_METADATA_BYTES = 4096
"""All of a memory's metadata, as compact UTF-8 JSON."""
MAX_FILTER_IDS = 100
"""`ids` given to `memory_forget` in one call."""
MAX_TIMESTAMP_CHARS = 64
"""An ISO-8601 timestamp argument (`event_time`, `time_from`, `time_to`)."""
MAX_TOP_K = 50
MAX_TTL_DAYS = 36_500
MAX_FORGET_BATCH = 1000
"""Memories one filtered `memory_forget` call forgets (`more` says when there are others)."""
MAX_INGEST_MESSAGES = 200
"""Messages one `memory_ingest` call takes (a long chat is sent in several calls)."""
MAX_INGEST_CHARS = 100_000
"""All the `content` of one `memory_ingest` call together (and each message's is `MAX_CONTENT_CHARS`)."""
MIN_IMPORTANCE, MAX_IMPORTANCE = 1, 5
MIN_CONFIDENCE, MAX_CONFIDENCE = 0.0, 1.0
DEFAULT_AGENT = "default"


class MemoryType(StrEnum):
    """What kind of thing is remembered."""

    WORKING = "working"  # this session's scratch, short TTL
    EPISODIC = "episodic"  # what happened, when
    SEMANTIC = "semantic"  # facts, preferences
    PROCEDURAL = "procedural"  # how to do things, lessons from failures


class Visibility(StrEnum):
    """Who inside a tenant may recall a memory."""

    PRIVATE = "private"  # only the agent that wrote it
    SHARED = "shared"  # every agent of the tenant


class MemoryStatus(StrEnum):
    """Lifecycle state. Only `active` memories are recalled by default."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    DELETED = "deleted"


class MemorySource(StrEnum):
    """Through what a memory came in: its provenance, set by the service, never by a caller."""

    TOOL = "tool"  # memory_write (or memory_update) by an agent
    INGEST = "ingest"  # memory_ingest: a message, or a fact extracted from one (`speaker` says whose)
    IMPORT = "import"  # `rearview import` of an export file
    SUMMARY = "summary"  # memory_summarize's consolidation of other memories


class HistoryAction(StrEnum):
    """Why a history event was appended."""

    CREATED = "created"
    MERGED = "merged"
    UPDATED = "updated"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"
    ARCHIVED = "archived"
    RESTORED = "restored"


class WriteAction(StrEnum):
    """What `memory_write` did."""

    CREATED = "created"
    MERGED = "merged"
    SUPERSEDED = "superseded"
    RETIRED = "retired"  # the content is a superseded memory's: nothing written, `superseded_by` says why


MetadataValue = str | int | float | bool
Importance = Annotated[int, Field(ge=MIN_IMPORTANCE, le=MAX_IMPORTANCE)]
Confidence = Annotated[float, Field(ge=MIN_CONFIDENCE, le=MAX_CONFIDENCE)]


def control_chars_problem(text: str) -> str | None:
    """Why `text` cannot be stored (a control character other than tab, newline, return), or None."""
    bad = disallowed_control_chars(text)
    if not bad:
        return None
    shown = ", ".join(f"U+{c:04X}" for c in bad[:5])
    return f"contains control characters ({shown}); only tab, newline and carriage return are allowed"


def query_terms_problem(query: str) -> str | None:
    """Why `query` has too many distinct terms (`MAX_QUERY_TERMS`), or None."""
    terms = len(query_tokens(query))
    return f"has {terms} distinct terms; the limit is {MAX_QUERY_TERMS}" if terms > MAX_QUERY_TERMS else None


def metadata_bytes_problem(metadata: Mapping[str, object]) -> str | None:
    """Why `metadata` is too large as compact UTF-8 JSON (`MAX_METADATA_BYTES`), or None."""
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode())
    return (
        f"is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}" if size > MAX_METADATA_BYTES else None
    )


def _refusing(problem: Any) -> AfterValidator:
    """A pydantic validator that fails with `problem(value)` when that is not None."""

    def check(value: Any) -> Any:
        reason = problem(value)
        if reason is not None:
            raise ValueError(reason)
        return value

    return AfterValidator(check)


_PlainText = _refusing(control_chars_problem)
_Visible = BeforeValidator(lambda v: strip_format_chars(v) if isinstance(v, str) else v)
"""Invisible format characters dropped before any limit is checked (`text.strip_format_chars`)."""
StoredText = Annotated[str, _Visible]
"""Text a memory stores (content, speaker): never holding invisible format characters."""

# The limits as pydantic types, for the edge (the MCP tool parameters): their JSON schemas advertise
# each limit, and a value beyond one fails validation naming the field and the limit. The service
# does not rely on them: it checks the same limits itself (`service/validation.py`).
ContentText = Annotated[str, _Visible, Field(min_length=1, max_length=MAX_CONTENT_CHARS), _PlainText]
QueryText = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_CHARS), _PlainText, _refusing(query_terms_problem)
]
MemoryId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
MemoryIds = Annotated[list[MemoryId], Field(max_length=MAX_FILTER_IDS)]
SessionIdText = Annotated[str, Field(min_length=1, max_length=MAX_SESSION_ID_CHARS), _PlainText]
AgentIdText = Annotated[str, Field(min_length=1, max_length=MAX_AGENT_ID_CHARS), _PlainText]
IdempotencyKeyText = Annotated[str, Field(min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS), _PlainText]
Label = Annotated[str, Field(max_length=MAX_LABEL_CHARS), _PlainText]
Labels = Annotated[list[Label], Field(max_length=MAX_TAGS)]
TimestampText = Annotated[str, Field(max_length=MAX_TIMESTAMP_CHARS)]
MetadataKey = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS), _PlainText]


def _one_metadata_problem(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """One message for a metadata value that fits no member of the union (pydantic gives one per member)."""
    try:
        return handler(value)
    except ValidationError:
        if not isinstance(value, str):
            raise ValueError("must be a string, number or boolean") from None
        if len(value) > MAX_METADATA_VALUE_CHARS:
            raise ValueError(f"is {len(value)} characters; the limit is {MAX_METADATA_VALUE_CHARS}") from None
        raise ValueError(control_chars_problem(value) or "is not a valid string") from None


MetadataScalar = Annotated[
    Annotated[str, Field(max_length=MAX_METADATA_VALUE_CHARS), _PlainText] | int | float | bool,
    WrapValidator(_one_metadata_problem),
]
FlatMetadata = Annotated[
    dict[MetadataKey, MetadataScalar], Field(max_length=MAX_METADATA_KEYS), _refusing(metadata_bytes_problem)
]
MemoryTypes = Annotated[list[MemoryType], Field(max_length=len(MemoryType))]
TtlDays = Annotated[float, Field(gt=0, le=MAX_TTL_DAYS)]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K)]


class MemoryView(BaseModel):
    """A memory as the API shows it (no tenant or internal keys)."""

    model_config = ConfigDict(frozen=True)

    id: str
    type: MemoryType
    content: str
    agent_id: str
    session_id: str | None = None
    visibility: Visibility = Visibility.SHARED
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    importance: int = 3
    confidence: float = 1.0
    strength: float = 1.0
    access_count: int = 0
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime
    event_time: datetime
    expires_at: datetime | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE
    superseded_by: str | None = None
    derived_from: list[str] = Field(default_factory=list)
    version: int = 1
    embedding_model: str | None = None
    source: MemorySource = MemorySource.TOOL
    """Through what it came in (records stored before provenance was kept read as `tool`)."""
    speaker: str | None = None
    """Who said it, for an ingested message or fact: the message's speaker, not the writing agent."""
    consolidated_into: str | None = None
    """The summary (`memory_summarize`) that consolidated this memory: it ranks below the summary."""


class Memory(MemoryView):
    """The stored record: the view plus the tenant and the keys used for dedup and replay."""

    tenant_id: str
    content_hash: str
    scope_key: str
    idempotency_key: str | None = None
    archive_ref: str | None = None

    def view(self) -> MemoryView:
        """This memory without tenant and internal keys."""
        return MemoryView.model_validate(self.model_dump(include=set(MemoryView.model_fields)))

    def is_expired(self, now: datetime) -> bool:
        """Past `expires_at`: treated as absent on read (TTL deletion is lazy)."""
        return self.expires_at is not None and self.expires_at <= now

    def visible_to(self, agent_id: str) -> bool:
        """Whether `agent_id` may see this memory: any agent a `shared` one, its writer a `private` one."""
        return self.visibility is Visibility.SHARED or self.agent_id == agent_id


class HistoryEvent(BaseModel):
    """One append-only change to a memory: what it was before, what it became, and why."""

    model_config = ConfigDict(frozen=True)

    id: str
    tenant_id: str
    memory_id: str
    action: HistoryAction
    at: datetime
    actor: str | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    note: str | None = None


class MemoryFilter(BaseModel):
    """Restrictions applied *inside* store and index queries (never as a post-filter).

    `agent_id` is the caller's agent: it sees `shared` memories and its own `private` ones
    (None means no agent restriction, for operators). `tags` must all be present.
    `time_from`/`time_to` bound `event_time` (inclusive). `scope_key` pins one dedup scope.
    """

    model_config = ConfigDict(frozen=True)

    agent_id: str | None = None
    session_id: str | None = None
    types: tuple[MemoryType, ...] | None = None
    tags: tuple[str, ...] | None = None
    time_from: datetime | None = None
    time_to: datetime | None = None
    statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,)
    scope_key: str | None = None

    def matches(self, memory: Memory) -> bool:
        """The reference semantics every backend must reproduce (used by fakes and tests)."""
        checks = (
            self.agent_id is None or memory.visible_to(self.agent_id),
            self.session_id is None or memory.session_id == self.session_id,
            self.types is None or memory.type in self.types,
            self.tags is None or set(self.tags) <= set(memory.tags),
            self.time_from is None or memory.event_time >= self.time_from,
            self.time_to is None or memory.event_time <= self.time_to,
            memory.status in self.statuses,
            self.scope_key is None or memory.scope_key == self.scope_key,
        )
        return all(checks)


class WriteRequest(BaseModel):
    """Input of `MemoryService.write`."""

    content: StoredText
    type: MemoryType = MemoryType.SEMANTIC
    agent_id: str = DEFAULT_AGENT
    session_id: str | None = None
    visibility: Visibility = Visibility.SHARED
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    importance: Importance = 3
    confidence: Confidence = 1.0
    event_time: datetime | None = None
    ttl_days: float | None = None
    supersedes: str | None = None
    idempotency_key: str | None = None
    derived_from: list[str] = Field(default_factory=list)
    source: MemorySource = MemorySource.TOOL
    """Provenance: set by the service for what it writes itself (ingest, summary); a tool call is `tool`."""
    speaker: StoredText | None = None


class WriteResult(BaseModel):
    """What `memory_write` did. `memory` is the stored record after the operation."""

    action: WriteAction
    memory: MemoryView
    merged_into: str | None = None
    similarity: float | None = None
    superseded_ids: list[str] = Field(default_factory=list)
    idempotent_replay: bool = False
    indexed: bool = True
    related_id: str | None = None
    """A near duplicate this write was not merged into, because a merge would have lost a fact."""
    not_merged_because: str | None = None
    """Which fact differs from `related_id`, e.g. `version differs: 3.11 -> 3.12`."""
    superseded_by: str | None = None
    """For `retired`: the memory that replaced the one this content repeats. To bring the old fact
    back on purpose, write it again with `supersedes` naming that memory."""


class IngestMessage(BaseModel):
    """One message of a conversation as `memory_ingest` receives it.

    `speaker` is who said it (a name); `role` (`user`, `assistant`, ...) stands in when there is no
    name: at least one is required. `timestamp` is when it was said (else the time of ingest).
    `message_id` is the caller's id of the message, what makes re-sending it a no-op.
    """

    model_config = ConfigDict(extra="forbid")

    content: StoredText
    speaker: StoredText | None = None
    role: str | None = None
    timestamp: datetime | None = None
    message_id: str | None = None


class IngestRequest(BaseModel):
    """Input of `MemoryService.ingest`: a conversation's messages, in the order they were said."""

    messages: list[IngestMessage]
    session_id: str
    agent_id: str = DEFAULT_AGENT
    visibility: Visibility = Visibility.SHARED


class ExtractionMode(StrEnum):
    """How an ingest decided what to remember from a message."""

    RULES = "rules"  # offline: the message itself (episodic) + explicit self-statements (semantic)
    LLM = "llm"  # REARVIEW_LLM: the message itself (episodic) + what a language model extracted
    FALLBACK = "fallback"  # the language model failed: the messages themselves only (`fallback_reason`)


class MessageOutcome(BaseModel):
    """What one ingested message became. Ids, by what the write path did with each memory.

    `replayed`: memories an earlier ingest of the same message already wrote (nothing changed).
    """

    index: int
    message_id: str | None = None
    memory_id: str
    """The message's episodic memory (created, merged into, or written by an earlier ingest)."""
    mode: ExtractionMode
    created: list[str] = Field(default_factory=list)
    merged: list[str] = Field(default_factory=list)
    superseded: list[str] = Field(default_factory=list)
    replayed: list[str] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)
    """The semantic statements extracted from the message (each one is among the ids above)."""


class IngestResult(BaseModel):
    """Output of `memory_ingest`: one outcome per message, in order, and the totals."""

    session_id: str
    mode: ExtractionMode
    messages: list[MessageOutcome]
    created: int
    merged: int
    superseded: int
    replayed: int
    indexed: bool = True
    """False when some memory could not be indexed (it is stored; `rearview reindex` repairs)."""
    fallback_reason: str | None = None
    """Why the language model's extraction was not used (`mode` is `fallback`), else None."""
    dropped_items: int = 0
    """Items the language model extracted but cited no message of the call for (not written)."""


class UpdateRequest(BaseModel):
    """Input of `MemoryService.update`; None leaves a field unchanged."""

    memory_id: str
    content: StoredText | None = None
    tags: list[str] | None = None
    entities: list[str] | None = None
    metadata: dict[str, MetadataValue] | None = None
    importance: Importance | None = None
    confidence: Confidence | None = None
    event_time: datetime | None = None
    ttl_days: float | None = None
    expected_version: int | None = None
    agent_id: str = DEFAULT_AGENT


Channel = Literal["keyword", "vector"]


class SearchRequest(BaseModel):
    """Input of `MemoryService.search`. `agent_id` is the caller's agent: it scopes `filter`."""

    query: str
    filter: MemoryFilter = Field(default_factory=MemoryFilter)
    agent_id: str = DEFAULT_AGENT
    top_k: int = 10
    min_score: float = 0.0
    channels: tuple[Channel, ...] = ("keyword", "vector")
    reinforce: bool = True


class HitExplanation(BaseModel):
    """Why a memory was found: the terms of its score (`service/search/ranking.py` has the formula).

    `score = relevance * importance * recency * strength * subject * consolidated`, where `relevance`
    (on the hit) is `w * keyword_score + (1 - w) * vector_score`. The channel ranks are on the hit.
    """

    keyword_score: float
    """The share of the query's BM25 scale the memory matches, saturated to [0, 1); 0 when the keyword
    channel did not return it."""
    vector_score: float
    """Cosine above the query's baseline for unrelated text, saturated to [0, 1); 0 when not returned."""
    importance: float
    recency: float
    strength: float
    subject: float
    """Below 1 when the query names one known subject and this memory's speaker is another."""
    consolidated: float = 1.0
    """Below 1 when a summary consolidated this memory (`consolidated_into`)."""


class SearchHit(BaseModel):
    """One recalled memory. `score` is the final ranking score (higher is better, in [0, 1])."""

    id: str
    content: str
    type: MemoryType
    score: float
    relevance: float
    confidence: float
    importance: int
    strength: float
    tags: list[str]
    agent_id: str
    session_id: str | None
    status: MemoryStatus
    created_at: datetime
    updated_at: datetime
    event_time: datetime
    last_accessed_at: datetime
    keyword_rank: int | None = None
    vector_rank: int | None = None
    source: MemorySource = MemorySource.TOOL
    speaker: str | None = None
    why: HitExplanation
    """The terms of `score`: normalized channel scores and re-rank factors."""
    related: list[str] = Field(default_factory=list)
    """Lower-ranked memories folded into this hit: the message it was extracted from, or what was
    extracted from it (`collapse.collapse_extracted`); each can be read with `memory_get`."""


class SearchResult(BaseModel):
    """Output of `memory_search`: ranked hits, a ready-to-inject context block and its size."""

    query: str
    results: list[SearchHit]
    context: str
    token_estimate: int
    degraded: bool = False
    degraded_reason: str | None = None


class ForgetRequest(BaseModel):
    """Input of `MemoryService.forget`: explicit ids, or a filter (at least one criterion).

    `agent_id` is the caller's agent: it scopes `filter` and must see every id.
    """

    ids: list[str] = Field(default_factory=list)
    filter: MemoryFilter | None = None
    hard: bool = False
    agent_id: str = DEFAULT_AGENT


class ForgetResult(BaseModel):
    """Which memories were forgotten; `more` is true when a filter matched more than one batch."""

    forgotten: list[str]
    hard: bool
    more: bool = False


class StoreStats(BaseModel):
    """Counts a store can answer for one tenant without scanning other tenants."""

    total: int
    by_type: dict[str, int]
    by_status: dict[str, int]
    oldest: datetime | None = None
    newest: datetime | None = None


class Stats(StoreStats):
    """Output of `memory_stats`."""

    embedding_model: str
    index_documents: int | None = None


class HistoryResult(BaseModel):
    """Output of `memory_history`: the memory (if it still exists) and its events, oldest first."""

    memory_id: str
    memory: MemoryView | None
    events: list[HistoryEvent]


class Page(BaseModel):
    """One page of a listing; pass `cursor` back to get the next, None when done."""

    items: list[Memory]
    cursor: str | None = None

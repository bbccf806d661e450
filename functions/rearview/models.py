"""The memory model: records, history events, filters and the service's requests and results.

Everything here is plain data (pydantic), shared by the service, the adapters and the API. The
requests are valid by construction: their fields are the limit types of `limits.py`, and a value
beyond one is an `InvalidInputError` naming the field and the limit (`ValidRequest`), so the
service never checks a field again. Records and results are not re-checked: they come from the
service or a store.

Over 450 lines on purpose: each operation's request and result stand beside the record and the
filter they describe (the tool schemas and the wire format are generated from them); the limits
they are built from are in `limits.py`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from rearview.errors import InvalidInputError
from rearview.limits import (
    MAX_INGEST_CHARS,
    MAX_INGEST_MESSAGES,
    MAX_LABEL_CHARS,
    MAX_MEMORY_CUES,
    AgentIdText,
    Alternatives,
    Confidence,
    ContentText,
    Cues,
    FilterTags,
    FlatMetadata,
    IdempotencyKeyText,
    Importance,
    Labels,
    LabelText,
    MemoryId,
    MemoryIds,
    QueryText,
    SessionIdText,
    SpeakerText,
    TopK,
    TtlDays,
    ValidRequest,
    Visible,
    text_problem,
)

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
    CORROBORATED = "corroborated"  # another agent's memory held the fact: the writer's own copy, linked
    SUPERSEDED = "superseded"
    RETIRED = "retired"  # the content is a superseded memory's: nothing written, `superseded_by` says why


MetadataValue = str | int | float | bool
SERVICE_CUE_AUTHOR = "rearview"
"""`Cue.by` of a cue the service wrote itself (a language model's, `REARVIEW_LLM`), not a writer's."""


class Cue(BaseModel):
    """One recall cue: a way someone might later ask for a memory, and who wrote it.

    Indexed beside the memory's content (the keyword channel at `ports.CUE_WEIGHT`, the vector channel
    as the best of content and cues), shown with it, never part of it: dedup compares content only.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    by: str
    """The agent that gave it (`SERVICE_CUE_AUTHOR` for the service's own)."""


def united_cues(kept: list[Cue], added: list[Cue]) -> list[Cue]:
    """`kept` then the `added` cues whose text is new (casefolded), at most `MAX_MEMORY_CUES` in all."""
    seen = {" ".join(c.text.casefold().split()) for c in kept}
    out = list(kept)
    for cue in added:
        key = " ".join(cue.text.casefold().split())
        if key not in seen and len(out) < MAX_MEMORY_CUES:
            seen.add(key)
            out.append(cue)
    return out


MemoryTypes = Annotated[list[MemoryType], Field(max_length=len(MemoryType))]


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
    source_agents: list[str] = Field(default_factory=list)
    """A summary's lineage: the agents who wrote the memories it carries words of (`derived_from`),
    in order of first appearance; empty for a memory holding only its writer's words."""
    source_speakers: list[str] = Field(default_factory=list)
    """A summary's lineage: the speakers of the ingested messages it carries words of."""
    cues: list[Cue] = Field(default_factory=list)
    """Recall cues (`Cue`): how someone might later ask for it, each attributed to who wrote it."""


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


class MemoryFilter(ValidRequest):
    """Restrictions applied *inside* store and index queries (never as a post-filter).

    `agent_id` is the caller's agent: it sees `shared` memories and its own `private` ones
    (None means no agent restriction, for operators). `tags` must all be present.
    `time_from`/`time_to` bound `event_time` (inclusive). `scope_key` pins one dedup scope.
    """

    model_config = ConfigDict(frozen=True)

    agent_id: AgentIdText | None = None
    session_id: SessionIdText | None = None
    types: tuple[MemoryType, ...] | None = None
    tags: FilterTags | None = None
    time_from: datetime | None = None
    time_to: datetime | None = None
    statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,)
    scope_key: str | None = None

    @model_validator(mode="after")
    def _range_not_reversed(self) -> MemoryFilter:
        """A `time_from` after `time_to` matches nothing: that is the caller's mistake, so say so."""
        if self.time_from is not None and self.time_to is not None and self.time_from > self.time_to:
            raise InvalidInputError(
                "time_from",
                f"is after `time_to` ({self.time_from.isoformat()} > {self.time_to.isoformat()}): "
                "the range is empty (swap them?)",
            )
        return self

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


class WriteRequest(ValidRequest):
    """Input of `MemoryService.write`: content stripped, labels cleaned, every field in its limits."""

    content: ContentText
    type: MemoryType = MemoryType.SEMANTIC
    agent_id: AgentIdText = DEFAULT_AGENT
    session_id: SessionIdText | None = None
    visibility: Visibility = Visibility.SHARED
    tags: Labels = Field(default_factory=list)
    entities: Labels = Field(default_factory=list)
    metadata: FlatMetadata = Field(default_factory=dict)
    importance: Importance = 3
    confidence: Confidence = 1.0
    event_time: datetime | None = None
    created_at: datetime | None = None
    """When the memory was first recorded, for one moved in from elsewhere (an import); None: now.
    A new memory's age, retention and decay count from it (never from the future)."""
    ttl_days: TtlDays | None = None
    supersedes: MemoryId | None = None
    idempotency_key: IdempotencyKeyText | None = None
    derived_from: list[MemoryId] = Field(default_factory=list)
    source: MemorySource = MemorySource.TOOL
    """Provenance: set by the service for what it writes itself (ingest, summary); a tool call is `tool`."""
    speaker: SpeakerText | None = None
    source_agents: list[AgentIdText] = Field(default_factory=list)
    """A summary's lineage (set by the service): the agents whose words it carries."""
    source_speakers: list[SpeakerText] = Field(default_factory=list)
    """A summary's lineage (set by the service): the speakers of the messages whose words it carries."""
    cues: Cues = Field(default_factory=list)
    """Recall cues: how someone might later ask for this memory, in other words or another language."""


class WriteResult(BaseModel):
    """What `memory_write` did. `memory` is the stored record after the operation."""

    action: WriteAction
    memory: MemoryView
    merged_into: str | None = None
    similarity: float | None = None
    corroborates: str | None = None
    """For `corroborated`: another agent's active memory with the same (or nearly the same) fact.
    `memory` is the writer's own copy: each agent's edits and erasures change only its own."""
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
    warnings: list[str] | None = None
    """What the write stored despite a doubt, e.g. content that looks like a credential
    (`REARVIEW_SECRETS=warn`); None when there is nothing to say."""


class IngestMessage(BaseModel):
    """One message of a conversation as `memory_ingest` receives it.

    `speaker` is who said it (a name); `role` (`user`, `assistant`, ...) stands in when there is no
    name: at least one is required. `timestamp` is when it was said (else the time of ingest).
    `message_id` is the caller's id of the message, what makes re-sending it a no-op.
    """

    model_config = ConfigDict(extra="forbid")

    content: ContentText
    role: Annotated[str | None, Visible] = None
    speaker: Annotated[str | None, Visible, Field(validate_default=True)] = None
    timestamp: datetime | None = None
    message_id: LabelText | None = None

    @field_validator("speaker")
    @classmethod
    def _someone_said_it(cls, speaker: str | None, info: ValidationInfo) -> str | None:
        """Who said it, `speaker` or else `role`, must be a label (the field named is `speaker`)."""
        said_by = (speaker or info.data.get("role") or "").strip()
        problem = text_problem(said_by, MAX_LABEL_CHARS)
        if problem:
            raise ValueError(problem)
        return speaker

    @property
    def said_by(self) -> str:
        """Who said it: the speaker's name, else the role."""
        return (self.speaker or self.role or "").strip()


class IngestRequest(ValidRequest):
    """Input of `MemoryService.ingest`: a conversation's messages, in the order they were said.

    1..`MAX_INGEST_MESSAGES` messages of at most `MAX_INGEST_CHARS` characters of content together.
    """

    messages: list[IngestMessage]
    session_id: SessionIdText
    agent_id: AgentIdText = DEFAULT_AGENT
    visibility: Visibility = Visibility.SHARED

    @field_validator("messages")
    @classmethod
    def _one_call_of_a_conversation(cls, messages: list[IngestMessage]) -> list[IngestMessage]:
        if not 1 <= len(messages) <= MAX_INGEST_MESSAGES:
            raise ValueError(f"has {len(messages)} items; give 1 to {MAX_INGEST_MESSAGES} per call")
        total = sum(len(m.content) for m in messages)
        if total > MAX_INGEST_CHARS:
            raise ValueError(f"has {total} characters of content; the limit is {MAX_INGEST_CHARS} per call")
        return messages


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


class RefusedMessage(BaseModel):
    """A message of an ingest that was not stored (it holds a credential); the call's others were."""

    index: int
    message_id: str | None = None
    field: str
    """The field refused, as an error names it (`messages[2].content`)."""
    reason: str


class IngestResult(BaseModel):
    """Output of `memory_ingest`: one outcome per stored message, in order, and the totals."""

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
    cancelled: bool = False
    """The caller cancelled: `messages` lists those stored before it stopped (whole chunks); re-send
    the call to store the rest (what is stored replays)."""
    refused: list[RefusedMessage] = Field(default_factory=list)
    """Messages not stored because a field of theirs holds a credential (`REARVIEW_SECRETS`); the
    others are (they have no outcome in `messages`)."""


class UpdateRequest(ValidRequest):
    """Input of `MemoryService.update`; None leaves a field unchanged."""

    memory_id: MemoryId
    content: ContentText | None = None
    tags: Labels | None = None
    entities: Labels | None = None
    metadata: FlatMetadata | None = None
    importance: Importance | None = None
    confidence: Confidence | None = None
    event_time: datetime | None = None
    ttl_days: TtlDays | None = None
    expected_version: int | None = None
    agent_id: AgentIdText = DEFAULT_AGENT
    agent_bound: bool = False
    """The credential is bound to `agent_id`: it may update only memories that agent wrote."""
    cues: Cues | None = None
    """Replaces the memory's recall cues (an empty list removes them); None keeps them."""


Channel = Literal["keyword", "vector"]


class SearchRequest(ValidRequest):
    """Input of `MemoryService.search`. `agent_id` is the caller's agent: it scopes `filter`."""

    query: QueryText
    filter: MemoryFilter = Field(default_factory=MemoryFilter)
    agent_id: AgentIdText = DEFAULT_AGENT
    top_k: TopK = 10
    min_score: Annotated[float, Field(ge=0)] = 0.0
    channels: tuple[Channel, ...] = ("keyword", "vector")
    reinforce: bool = True
    reference_time: datetime | None = None
    """The "now" the question is asked about ("last week" is the week before it); None: the server's now."""
    alternatives: Alternatives | None = None
    """Other phrasings of `query`, searched together with it: a memory any of them matches can rank first."""

    @model_validator(mode="after")
    def _alternatives_differ(self) -> SearchRequest:
        """An alternative that repeats the query adds a second embedding and no recall: say so."""
        key = " ".join(self.query.casefold().split())
        for n, alt in enumerate(self.alternatives or ()):
            if " ".join(alt.casefold().split()) == key:
                raise InvalidInputError(
                    f"alternatives[{n}]", "repeats `query`; give another phrasing or leave it out"
                )
        return self

    @property
    def phrasings(self) -> list[str]:
        """`query` then its alternatives: what the channels search, in that order."""
        return [self.query, *(self.alternatives or ())]


class HitExplanation(BaseModel):
    """Why a memory ranked (`service/search/ranking.py`).

    `score = relevance * importance * recency * strength * subject * temporal * consolidated`;
    `relevance` includes any second-hop lift or archived share.
    """

    relevance: float = 0.0
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
    temporal: float = 1.0
    """Below 1 when the query names a time this memory is not about, or asks when and it states no time."""
    consolidated: float = 1.0
    """Below 1 when a summary consolidated this memory (`consolidated_into`)."""
    cue: str | None = None
    """The recall cue whose vector carried `vector_score`; None when the content did."""
    phrasing: str | None = None
    """The alternative that carried the evidence; None when the query itself did."""


class SearchHit(BaseModel):
    """One recalled memory. `score` is the final ranking score (higher is better, in [0, 1])."""

    id: str
    content: str
    type: MemoryType
    score: float
    relevance: float
    relevant: bool = True
    """Whether `relevance` reaches `RankingPolicy.relevant_at`: a likely answer. False: a weak match,
    returned because nothing better was found, marked so (the context block says so too)."""
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
    source_agents: list[str] = Field(default_factory=list)
    """A summary's lineage: the agents whose words it carries (`MemoryView.source_agents`)."""
    source_speakers: list[str] = Field(default_factory=list)
    why: HitExplanation
    """The terms of `score`: normalized channel scores and re-rank factors."""
    related: list[str] = Field(default_factory=list)
    """Lower-ranked memories folded into this hit: the message it was extracted from, what was
    extracted from it, or another agent's copy of the same text (`collapse.collapse_extracted`);
    each can be read with `memory_get`."""


class SearchResult(BaseModel):
    """Output of `memory_search`: ranked hits, a ready-to-inject context block and its size."""

    query: str
    results: list[SearchHit]
    context: str
    token_estimate: int
    degraded: bool = False
    degraded_reason: str | None = None


class ForgetRequest(ValidRequest):
    """Input of `MemoryService.forget`: explicit ids, or a filter (at least one criterion).

    `agent_id` is the caller's agent: it scopes `filter` and must see every id. With `agent_bound`
    (the credential is bound to that agent) it may forget only memories the agent wrote: an id of
    another agent's memory is refused, a filter reaches only the agent's own memories.
    """

    ids: MemoryIds = Field(default_factory=list)
    filter: MemoryFilter | None = None
    hard: bool = False
    agent_id: AgentIdText = DEFAULT_AGENT
    agent_bound: bool = False


class ForgetResult(BaseModel):
    """The receipt of a forget: what was forgotten, and every derived copy the forget reached.

    `more` is true when a filter matched more than one batch. A hard forget erases the words
    everywhere: of the memories derived from a forgotten one (a summary of it, a fact extracted
    from it), `derived_erased` lists those that still carried its words and were erased with it,
    `derived_rederived` the summaries made again from their other sources, and `derived_unlinked`
    those that no longer carried its words (rewritten by their writer): kept, their lineage to it
    dropped. `archive_copies_erased` counts the archive objects it was erased from.
    """

    forgotten: list[str]
    hard: bool
    more: bool = False
    derived_erased: list[str] = Field(default_factory=list)
    archive_copies_erased: int = 0
    derived_rederived: list[str] = Field(default_factory=list)
    derived_unlinked: list[str] = Field(default_factory=list)


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
    embedder_status: str | None = None
    """Set when the embedder runs in a fallback: why (e.g. the ONNX embedder failed its check)."""
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

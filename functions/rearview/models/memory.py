"""The memory record: its kinds and states, its recall cues, the API's view of it, and the filter over it.

`Memory` is what a store holds, `MemoryView` what the API shows; `MemoryFilter` holds the
restrictions every store and index applies inside its queries, `MemoryFilter.matches` their
reference semantics.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rearview.errors import InvalidInputError
from rearview.limits import MAX_MEMORY_CUES, AgentIdText, FilterTags, SessionIdText, ValidRequest

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


MetadataValue = str | int | float | bool
SERVICE_CUE_AUTHOR = "rearview"
"""`Cue.by` of a cue the service wrote itself (a language model's, `REARVIEW_LLM`), not a writer's."""


class Cue(BaseModel):
    """One recall cue: a way someone might later ask for a memory, and who wrote it.

    Indexed beside the memory's content (the keyword channel at `ports.CUE_WEIGHT`, the vector channel
    as the best of content and cues), shown with it, never part of it: dedup compares content only.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

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

    model_config = ConfigDict(defer_build=True, frozen=True)

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
    verified_at: datetime | None = None
    """When an agent last checked that it still holds (`memory_update(verified=true)`); no new version."""
    verified_by: str | None = None
    """The agent that recorded `verified_at`."""
    contested_by: list[str] = Field(default_factory=list)
    """Newer memories that state another value about its subject, written without `supersedes`
    (`service/write/conflicts.py`): until it is retired, each ranks above it and it reads as possibly
    outdated."""

    @property
    def fresh_at(self) -> datetime:
        """Its freshness: the later of its last change and its last verification (ranking's age)."""
        return max(self.updated_at, self.verified_at) if self.verified_at else self.updated_at


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


class MemoryFilter(ValidRequest):
    """Restrictions applied *inside* store and index queries (never as a post-filter).

    `agent_id` is the caller's agent: it sees `shared` memories and its own `private` ones
    (None means no agent restriction, for operators). `tags` must all be present.
    `time_from`/`time_to` bound `event_time` (inclusive). `scope_key` pins one dedup scope.
    `as_of` keeps the memories that may have been active then (`as_of_matches`): written by then,
    and active now or changed since; `service.search.as_of` decides each from its history.
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
    as_of: datetime | None = None

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
            self.as_of is None or as_of_matches(memory, self.as_of),
        )
        return all(checks)


def as_of_matches(memory: Memory, as_of: datetime) -> bool:
    """Whether `memory` may have been active at `as_of`: every memory that was is kept.

    Written by then (`created_at`), and active now or changed after it (`updated_at`: a retirement
    changes it). A superset: the memory's history decides (`service.search.as_of.state_at`).
    """
    return memory.created_at <= as_of and (memory.status is MemoryStatus.ACTIVE or memory.updated_at > as_of)

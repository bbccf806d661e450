"""`memory_write`'s request and result: what to remember, and what the write path did with it."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from rearview.limits import (
    AgentIdText,
    Confidence,
    ContentText,
    Cues,
    FlatMetadata,
    IdempotencyKeyText,
    Importance,
    Labels,
    MemoryId,
    SessionIdText,
    SpeakerText,
    TtlDays,
    ValidRequest,
)
from rearview.models.memory import DEFAULT_AGENT, MemorySource, MemoryType, MemoryView, Visibility


class WriteAction(StrEnum):
    """What `memory_write` did."""

    CREATED = "created"
    MERGED = "merged"
    CORROBORATED = "corroborated"  # another agent's memory held the fact: the writer's own copy, linked
    SUPERSEDED = "superseded"
    RETIRED = "retired"  # the content is a superseded memory's: nothing written, `superseded_by` says why


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


class Conflicting(BaseModel):
    """An older active memory a write states another value for (`WriteResult.conflicts`)."""

    model_config = ConfigDict(defer_build=True)

    id: str
    content: str
    written_at: datetime


class WriteResult(BaseModel):
    """What `memory_write` did. `memory` is the stored record after the operation."""

    model_config = ConfigDict(defer_build=True)

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
    conflicts: list[Conflicting] = Field(default_factory=list)
    """Older memories about the same subject that this write states another value for, written without
    `supersedes` (`service/write/conflicts.py`); the write now ranks above them. Retire one that is
    outdated: write again with `supersedes` naming it."""
    superseded_by: str | None = None
    """For `retired`: the memory that replaced the one this content repeats. To bring the old fact
    back on purpose, write it again with `supersedes` naming that memory."""
    warnings: list[str] | None = None
    """What the write stored despite a doubt, e.g. content that looks like a credential
    (`REARVIEW_SECRETS=warn`); None when there is nothing to say."""
    sources: list[MemoryView] | None = None
    """For `memory_summarize`'s offline extract: the memories it consolidated, oldest first, for the
    agent to write its own consolidation from; None otherwise."""

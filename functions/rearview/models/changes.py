"""The requests that change stored memories, `memory_update` and `memory_forget`, and a forget's receipt."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from rearview.limits import (
    AgentIdText,
    Confidence,
    ContentText,
    Cues,
    FlatMetadata,
    Importance,
    Labels,
    MemoryId,
    MemoryIds,
    TtlDays,
    ValidRequest,
)
from rearview.models.memory import DEFAULT_AGENT, MemoryFilter


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
    verified: bool | None = None
    """True records that `agent_id` checked the memory and it still holds (`verified_at`, `verified_by`):
    no content change, a `verified` history event. Only true is meaningful (false is an error)."""


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

    model_config = ConfigDict(defer_build=True)

    forgotten: list[str]
    hard: bool
    more: bool = False
    derived_erased: list[str] = Field(default_factory=list)
    archive_copies_erased: int = 0
    derived_rederived: list[str] = Field(default_factory=list)
    derived_unlinked: list[str] = Field(default_factory=list)

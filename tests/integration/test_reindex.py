"""`rearview reindex`: rebuild the derived index from the store, versioned behind an alias on OpenSearch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rearview.backends.memory import InMemoryMemoryStore
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import SearchRequest, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.service.reindex import reindex_all
from rearview.shared.clock import ManualClock
from tests.engines.opensearch_config import local_config
from tests.factories import T0

TOPICS = ["tea", "deploys", "Lisbon", "cats", "postgres", "vim", "rust", "budgets", "hiking", "jazz"]
CODEWORDS = [
    f"{a}{b}"
    for a in ("amber", "birch", "cobalt", "dune")
    for b in ("fox", "gale", "heron", "ink", "jade", "kelp", "lark", "moss", "nova", "opal")
]


def _fill(service: MemoryService) -> list[str]:
    """40 memories, each with a unique codeword; returns queries that each have one right answer."""
    for i, word in enumerate(CODEWORDS):
        topic = TOPICS[i % len(TOPICS)]
        service.write(
            "t1", WriteRequest(content=f"Note {i} about {topic}: the codeword is {word}", tags=[topic])
        )
    return [f"which note has codeword {word}?" for word in CODEWORDS[::4]]


def _ranked(service: MemoryService, queries: list[str]) -> list[list[str]]:
    return [
        [h.id for h in service.search("t1", SearchRequest(query=q, reinforce=False)).results] for q in queries
    ]


def _best(service: MemoryService, queries: list[str]) -> list[str]:
    """The top hit per query. Deeper ranks may differ in a fresh index: floating-point near-ties at
    the candidate-depth boundary can fall either way once rows are stored in another order."""
    return [ids[0] for ids in _ranked(service, queries)]


@pytest.fixture
def on_opensearch(opensearch_url: str) -> Iterator[tuple[MemoryService, Any]]:
    """A service on a fresh OpenSearch alias (versioned), and its index; the versions go after."""
    from rearview.backends.opensearch import OpenSearchMemoryIndex

    clock = ManualClock(T0)
    config = local_config(opensearch_url, 64, "rv-reindex")
    index = OpenSearchMemoryIndex(config)
    index.ensure_schema()
    yield MemoryService(InMemoryMemoryStore(clock), index, HashingEmbedder(64), clock), index
    index.client.indices.delete(index=f"{config.alias}-v*", ignore=[404])


@pytest.mark.opensearch
def test_reindex_into_a_new_version_switches_the_alias_with_same_results(
    on_opensearch: tuple[MemoryService, Any],
) -> None:
    service, index = on_opensearch
    queries = _fill(service)
    before = _best(service, queries)
    assert len(set(before)) == len(queries)  # each query found its own memory
    assert index.current_version() == 1
    assert reindex_all(service, ["t1"]) == {"t1": 40}
    assert index.current_version() == 2
    assert _best(service, queries) == before


@pytest.mark.opensearch
def test_reindexing_one_tenant_keeps_the_others_searchable(on_opensearch: tuple[MemoryService, Any]) -> None:
    """A rebuild of some tenants is in place: a new version holding only them would hide the rest."""
    service, index = on_opensearch
    queries = _fill(service)
    other = service.write("t2", WriteRequest(content="The other tenant's codeword is quartzwren"))
    assert reindex_all(service, ["t1"]) == {"t1": 40}
    assert index.current_version() == 1  # in place
    found = service.search("t2", SearchRequest(query="quartzwren codeword", reinforce=False)).results
    assert [h.id for h in found][:1] == [other.memory.id]
    assert len(set(_best(service, queries))) == len(queries)
    assert reindex_all(service, ["t1", "t2"]) == {"t1": 40, "t2": 1}
    assert index.current_version() == 2  # every tenant: a new version


def test_reindex_rebuilds_a_lost_embedded_index(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    store = InMemoryMemoryStore(clock)
    first = SQLiteMemoryIndex(tmp_path / "a.sqlite3", 64)
    first.ensure_schema()
    service = MemoryService(store, first, HashingEmbedder(64), clock)
    queries = _fill(service)
    before = _best(service, queries)
    assert len(set(before)) == len(queries)
    fresh = SQLiteMemoryIndex(tmp_path / "b.sqlite3", 64)
    fresh.ensure_schema()
    rebuilt = MemoryService(store, fresh, HashingEmbedder(64), clock)
    assert reindex_all(rebuilt, store.tenants()) == {"t1": 40}
    assert _best(rebuilt, queries) == before

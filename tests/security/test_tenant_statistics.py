"""One tenant cannot learn another tenant's words from its own keyword scores (issue 24, item 2).

The probe: tenant B stores "note zygomorphic" and "note quillwort" and searches for both words.
With corpus statistics shared across tenants, the ratio of the two scores moved 1.00 -> 0.82 after
tenant A wrote one memory containing "zygomorphic" (0.49 after five): a test of whether a codename,
an e-mail address or a name occurs anywhere in the deployment. With per-tenant statistics, tenant
B's hits (ids and scores) are exactly what they were, on every index.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rearview.models import MemoryFilter
from rearview.ports import CONTEXT_WEIGHT, IndexDocument, IndexQuery, MemoryIndex
from rearview.text.bm25 import bm25_rank_fields
from rearview.text.fts_terms import text_terms
from tests.contract.conftest import DIMENSION, INDEXES
from tests.factories import make_memory, unit_vector


@pytest.fixture(
    params=[
        pytest.param(name, marks=[pytest.mark.opensearch] if name.startswith("opensearch") else [])
        for name in sorted(INDEXES)
    ]
)
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryIndex]:
    ix = INDEXES[request.param](tmp_path, request)
    ix.ensure_schema()
    yield ix


def _write(index: MemoryIndex, tenant: str, memory_id: str, content: str, seed: int) -> None:
    memory = make_memory(content, tenant_id=tenant, memory_id=memory_id)
    index.upsert([IndexDocument(memory, unit_vector(seed, DIMENSION))])


FILLER = ["lunch with the design team", "the build is green again", "renew the parking permit"]


def _plant_b(index: MemoryIndex) -> None:
    """Tenant B's probe pair, among a few unrelated notes (so each probe word has a real IDF)."""
    _write(index, "tenant-b", "b-zygo", "note zygomorphic", 1)
    _write(index, "tenant-b", "b-quill", "note quillwort", 2)
    for i, text in enumerate(FILLER):
        _write(index, "tenant-b", f"b-filler-{i}", text, 3 + i)


def _probe(index: MemoryIndex) -> dict[str, float]:
    query = IndexQuery(tenant_id="tenant-b", filter=MemoryFilter(), limit=10, text="zygomorphic quillwort")
    return dict(index.search(query).keyword)


def test_another_tenants_words_do_not_move_my_keyword_scores(index: MemoryIndex) -> None:
    _plant_b(index)
    before = _probe(index)
    assert set(before) == {"b-zygo", "b-quill"}
    assert before["b-quill"] / before["b-zygo"] == pytest.approx(1.0)

    _write(index, "tenant-a", "a-0", "project zygomorphic is the new codename", 10)
    after_one = _probe(index)
    for i in range(1, 5):
        _write(index, "tenant-a", f"a-{i}", f"zygomorphic rollout step {i}", 10 + i)
    after_five = _probe(index)

    assert after_one == pytest.approx(before)
    assert after_five == pytest.approx(before)


def test_another_tenants_volume_is_not_my_candidate_set(index: MemoryIndex) -> None:
    """Tenant A's many matching documents neither reach tenant B nor change B's corpus size."""
    _plant_b(index)
    before = _probe(index)
    docs = [
        IndexDocument(
            make_memory(f"zygomorphic quillwort {i}", tenant_id="tenant-a", memory_id=f"a-{i}"),
            unit_vector(100 + i, DIMENSION),
        )
        for i in range(40)
    ]
    index.upsert(docs)
    assert _probe(index) == pytest.approx(before)


SHORT = ["alpha {i}", "alpha note {i}", "alpha on the list {i}"]
LONG = ["beta written down in the long weekly planning notes {i}", "beta again, somewhere in a long note {i}"]


def _plant_a_shortlist(index: MemoryIndex) -> list[IndexDocument]:
    """Tenant A: 20 matches of "alpha beta", more than a `limit=2` shortlist (6) holds.

    Within the tenant both words are equally rare, so the short "alpha" notes rank first; an
    index that picks its shortlist by corpus-wide statistics drops them once "alpha" is common
    elsewhere.
    """
    docs = [
        IndexDocument(
            make_memory(
                (SHORT if i % 2 else LONG)[i % (3 if i % 2 else 2)].format(i=i),
                tenant_id="tenant-a",
                memory_id=f"a-{i:02d}",
            ),
            unit_vector(200 + i, DIMENSION),
        )
        for i in range(20)
    ]
    index.upsert(docs)
    return docs


def test_another_tenants_words_do_not_move_my_keyword_shortlist(index: MemoryIndex) -> None:
    """The probe at the shortlist: tenant B writing one of A's words never changes A's hits.

    A's 20 matching documents outnumber the window an engine shortlists for `limit=2` (3 per hit);
    B then writes 200 documents holding "alpha". A's keyword hits, ids, order and scores, are what
    BM25 over A's documents alone gives, before and after.
    """
    docs = _plant_a_shortlist(index)
    query = IndexQuery(tenant_id="tenant-a", filter=MemoryFilter(), limit=2, text="alpha beta")
    corpus = [(d.memory.id, text_terms(d.memory.content), []) for d in docs]
    expected = bm25_rank_fields(corpus, "alpha beta", 2, CONTEXT_WEIGHT)
    before = index.search(query).keyword
    assert [i for i, _ in before] == [i for i, _ in expected]
    assert all(i in {d.memory.id for d in docs if "alpha" in d.memory.content} for i, _ in before)

    index.upsert(
        [
            IndexDocument(
                make_memory(f"alpha status {i}", tenant_id="tenant-b", memory_id=f"b-{i:03d}"),
                unit_vector(500 + i, DIMENSION),
            )
            for i in range(200)
        ]
    )
    after = index.search(query).keyword
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before])

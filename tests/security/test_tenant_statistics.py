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
from rearview.ports import IndexDocument, IndexQuery, MemoryIndex
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

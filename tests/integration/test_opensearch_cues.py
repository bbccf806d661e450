"""Recall cues in `OpenSearchMemoryIndex`, against a real OpenSearch 2.19 node (k-NN, lucene engine).

What every index promises of cues is in `tests/contract/test_index_cues_contract.py` (run here on both
id strategies too); these check how the adapter keeps it: BM25 with the cues' field at `CUE_WEIGHT`
exactly as `rearview.text.bm25` scores it, the cue vectors' nested k-NN query filtered inside the search
(never post-filtered), the schema of an index created before cues, and zero cue vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from uuid import uuid4

import numpy as np
import pytest
from opensearchpy import OpenSearch

from rearview.backends.opensearch import OpenSearchConfig, OpenSearchMemoryIndex, index_body
from rearview.backends.opensearch.mapping import (
    CUE_VECTORS_FIELD,
    CUES_FIELD,
    TERM_FIELDS,
    added_fields,
    document_source,
)
from rearview.models import Cue, Memory, MemoryFilter
from rearview.ports import CONTEXT_WEIGHT, CUE_WEIGHT, IndexDocument, IndexQuery, Vector
from rearview.text.bm25 import bm25_rank_fields
from rearview.text.fts_terms import text_terms
from tests.factories import make_memory

DIM = 32
E = np.eye(DIM, dtype=np.float32)
IndexFactory = Callable[..., OpenSearchMemoryIndex]
pytestmark = pytest.mark.opensearch


@pytest.fixture
def make_index(opensearch_url: str) -> Iterator[IndexFactory]:
    """Build adapters on the shared node; every index they create is deleted after the test."""
    aliases: list[str] = []

    def factory(**overrides: Any) -> OpenSearchMemoryIndex:
        values: dict[str, Any] = {
            "endpoint": opensearch_url,
            "dimension": DIM,
            "mode": "local",
            "engine": "lucene",
            "shards": 1,
            "replicas": 0,
            "refresh": "true",
            "alias": f"rv-cues-{uuid4().hex[:12]}",
            "timeout_s": 15.0,
        }
        values.update(overrides)
        index = OpenSearchMemoryIndex(OpenSearchConfig(**values))
        aliases.append(index.config.alias)
        index.ensure_schema()
        return index

    yield factory
    raw = OpenSearch(hosts=[opensearch_url], timeout=30)
    for alias in set(aliases):
        raw.indices.delete(index=f"{alias}-v*", ignore=[404])


def cued(memory_id: str, content: str, *cues: str, **fields: Any) -> Memory:
    memory = make_memory(content, memory_id=memory_id, **fields)
    return memory.model_copy(update={"cues": [Cue(text=text, by="agent1") for text in cues]})


def units(rng: np.random.Generator, n: int) -> Vector:
    raw = rng.standard_normal((n, DIM)).astype(np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [mid for mid, _ in hits]


def test_keyword_scores_with_cues_are_fts5_bm25_over_every_document_of_the_tenant(
    make_index: IndexFactory,
) -> None:
    """Phrases in cues, repeated in cues, split across fields: the ranking and the scores are
    `bm25_rank_fields` over four-field documents, with the tenant's own statistics (cues count in the
    length and the document frequencies; another tenant's and the cues' nested objects count for nothing)."""
    index = make_index()
    rng = np.random.default_rng(11)
    rows: dict[tuple[str, str], tuple[str, str, list[str]]] = {
        ("t1", "a"): ("The lighthouse keeper's daughter rowed to the harbour.", "", []),
        ("t1", "b"): ("A lighthouse at the harbour.", "[8 May 2023] keeper", ["who keeps the lighthouse?"]),
        ("t1", "c"): ("Harbour cranes unload containers at night.", "", ["lighthouse lighthouse lighthouse"]),
        ("t1", "d"): ("Nothing to see here.", "the keeper's log", ["the keeper's harbour"]),
        ("t1", "e"): ("Rowing practice at dawn.", "", ["boat", "what did we row to?", "harbour"]),
        ("t1", "f"): ("A quiet evening.", "", []),
        ("t1", "g"): ("Lunch with the team.", "", ["where did we eat"]),
        ("t2", "x"): ("Lighthouse lighthouse keeper harbour.", "", ["keeper's lighthouse harbour"]),
        ("t2", "y"): ("Another tenant's harbour.", "", []),
    }
    index.upsert(
        [
            IndexDocument(
                cued(mid, text, *cues, tenant_id=tenant),
                units(rng, 1)[0],
                context=ctx or None,
                cue_vectors=units(rng, len(cues)) if cues else None,
            )
            for (tenant, mid), (text, ctx, cues) in rows.items()
        ]
    )
    corpus = [
        (mid, text_terms(text), text_terms(ctx), text_terms("\n".join(cues)))
        for (tenant, mid), (text, ctx, cues) in rows.items()
        if tenant == "t1"
    ]
    for text in ("lighthouse keeper's harbour", "lighthouse", "row harbour", "keeper's"):
        for limit in (1, 3, 10):
            expected = bm25_rank_fields(corpus, text, limit, CONTEXT_WEIGHT, CUE_WEIGHT)
            hits = index.search(IndexQuery("t1", MemoryFilter(), limit, text=text)).keyword
            assert ids(hits) == ids(expected), (text, limit)
            assert [s for _, s in hits] == pytest.approx([s for _, s in expected], rel=1e-12), (text, limit)
    # `c` says "lighthouse" only in its cue, three times: the shortlist counts the repetitions.
    assert ids(index.search(IndexQuery("t1", MemoryFilter(), 1, text="lighthouse")).keyword) == ids(
        bm25_rank_fields(corpus, "lighthouse", 1, CONTEXT_WEIGHT, CUE_WEIGHT)
    )


def test_the_vector_query_filters_inside_both_knn_clauses(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With cues: a `dis_max` of the content's `knn` and the cues' nested `knn`, each with the tenant and
    the filter inside it; without (`match_cues=False`): the content's `knn` alone."""
    index = make_index()
    index.upsert([IndexDocument(cued("m1", "a note", "a cue", tags=["x"]), E[0], cue_vectors=E[1][None, :])])
    sent: list[dict[str, Any]] = []
    msearch = index.client.msearch

    def recording(body: list[dict[str, Any]], **kwargs: Any) -> Any:
        sent.extend(body[1::2])
        return msearch(body=body, **kwargs)

    monkeypatch.setattr(index.client, "msearch", recording)
    flt = MemoryFilter(tags=("x",))
    hits = index.search(IndexQuery("t1", flt, 3, vector=E[1]))
    assert hits.vector == [("m1", pytest.approx(1.0, abs=1e-5))] and hits.vector_cues == {"m1": 0}
    content, cues = sent[-1]["query"]["dis_max"]["queries"]
    nested = cues["nested"]
    assert nested["path"] == CUE_VECTORS_FIELD and nested["score_mode"] == "max"
    for knn in (content["knn"]["vector"], nested["query"]["knn"][f"{CUE_VECTORS_FIELD}.vector"]):
        clauses = knn["filter"]["bool"]["filter"]
        assert knn["k"] == 3 and clauses[0] == {"term": {"tenant_id": "t1"}}
        assert {"term": {"tags": "x"}} in clauses
    assert "post_filter" not in sent[-1]

    hits = index.search(IndexQuery("t1", flt, 3, vector=E[1], match_cues=False))
    assert hits.vector == [("m1", pytest.approx(0.0, abs=1e-5))] and hits.vector_cues == {}
    assert set(sent[-1]["query"]) == {"knn"} and "script_fields" not in sent[-1]


def test_filtered_cue_knn_for_a_small_tenant_in_a_large_index_returns_top_k(make_index: IndexFactory) -> None:
    """2000 memories of tenant `big` with two cues each, 5 of tenant `small`: a post-filtered nested
    search would find (almost surely) no `small` cue in its global top 5; the adapter returns the
    exact top 5 of `small` by the best of content and cues. Nested objects are not documents."""
    index = make_index()
    rng = np.random.default_rng(3)
    big = [
        IndexDocument(
            cued(f"b{i:04d}", f"big note {i}", "first", "second", tenant_id="big"),
            units(rng, 1)[0],
            cue_vectors=units(rng, 2),
        )
        for i in range(2000)
    ]
    small = [
        IndexDocument(
            cued(f"s{i}", f"small note {i}", *(f"cue {n}" for n in range(i % 3)), tenant_id="small"),
            units(rng, 1)[0],
            cue_vectors=units(rng, i % 3) if i % 3 else None,
        )
        for i in range(5)
    ]
    index.create_version(1)
    index.upsert_into(1, big + small)
    index.switch_alias(1)
    assert (index.count("big"), index.count("small")) == (2000, 5)
    query = units(rng, 1)[0]

    raw = index.client.search(
        index=index.config.alias,
        body={
            "size": 5,
            "_source": ["tenant_id"],
            "query": {
                "nested": {
                    "path": CUE_VECTORS_FIELD,
                    "query": {"knn": {f"{CUE_VECTORS_FIELD}.vector": {"vector": query.tolist(), "k": 5}}},
                }
            },
        },
    )
    assert sum(h["_source"]["tenant_id"] == "small" for h in raw["hits"]["hits"]) < 5

    best: dict[str, tuple[float, int | None]] = {}
    for d in small:
        assert d.vector is not None
        score, carrier = float(d.vector @ query), None
        if d.cue_vectors is not None and float((d.cue_vectors @ query).max()) > score:
            score, carrier = float((d.cue_vectors @ query).max()), int((d.cue_vectors @ query).argmax())
        best[d.memory.id] = (score, carrier)
    hits = index.search(IndexQuery("small", MemoryFilter(), 5, text="note", vector=query))
    assert ids(hits.vector) == sorted(best, key=lambda i: -best[i][0])
    assert [s for _, s in hits.vector] == pytest.approx(
        sorted((s for s, _ in best.values()), reverse=True), abs=1e-5
    )
    assert hits.vector_cues == {i: c for i, (_, c) in best.items() if c is not None}
    assert sorted(ids(hits.keyword)) == sorted(best)


def test_ensure_schema_adds_the_cue_fields_to_an_index_created_before_them(make_index: IndexFactory) -> None:
    """An index created before cues gains their fields (text, terms, nested vectors); its documents,
    written without them, are still found; new writes carry cues."""
    index = make_index(index_version=2)
    alias = index.config.alias
    index.client.indices.delete(index=f"{alias}-v2")
    body = index_body(index.config)
    for name in (CUES_FIELD, TERM_FIELDS["cues"], CUE_VECTORS_FIELD):
        del body["mappings"]["properties"][name]
    index.client.indices.create(index=f"{alias}-v2", body=body)
    index.client.indices.put_alias(index=f"{alias}-v2", name=alias)
    old = document_source(make_memory("the lighthouse at dusk", memory_id="old"), E[2], "")
    for name in (CUES_FIELD, TERM_FIELDS["cues"], CUE_VECTORS_FIELD):
        del old[name]
    index.client.index(index=alias, id="t1:old", body=old, refresh=True)
    before = index.search(
        IndexQuery("t1", MemoryFilter(), 5, text="lighthouse", vector=E[2])
    )  # no cue field yet
    assert ids(before.keyword) == ["old"] and before.vector == [("old", pytest.approx(1.0, abs=1e-5))]

    index.ensure_schema()
    props = index.client.indices.get_mapping(index=alias)[f"{alias}-v2"]["mappings"]["properties"]
    added = added_fields(index.config)
    assert {name: props[name] for name in (CUES_FIELD, TERM_FIELDS["cues"], CUE_VECTORS_FIELD)} == {
        name: added[name] for name in (CUES_FIELD, TERM_FIELDS["cues"], CUE_VECTORS_FIELD)
    }
    index.upsert(
        [IndexDocument(cued("new", "a harbour walk", "lighthouse keeper"), E[0], cue_vectors=E[1][None, :])]
    )
    hits = index.search(IndexQuery("t1", MemoryFilter(), 5, text="lighthouse", vector=E[1]))
    assert sorted(ids(hits.keyword)) == ["new", "old"]
    assert hits.vector[0] == ("new", pytest.approx(1.0, abs=1e-5)) and hits.vector_cues == {"new": 0}
    on_old = index.search(IndexQuery("t1", MemoryFilter(), 1, vector=E[2]))
    assert on_old.vector == [("old", pytest.approx(1.0, abs=1e-5))] and on_old.vector_cues == {}


@pytest.mark.parametrize("assigned_ids", [False, True])
def test_a_zero_cue_vector_is_kept_out_of_the_vector_channel(
    make_index: IndexFactory, assigned_ids: bool
) -> None:
    """`cosinesimil` rejects a zero vector: that cue is found by its words only, and the cues after it
    keep their numbers, through a vector-less update too."""
    index = make_index(assigned_ids=assigned_ids)
    memory = cued("m1", "a note", "nothing embedded", "the harbour crane")
    cue_vectors = np.stack([np.zeros(DIM, np.float32), E[1]])
    index.upsert([IndexDocument(memory, E[0], cue_vectors=cue_vectors)])
    index.upsert([IndexDocument(memory.model_copy(update={"tags": ["later"], "version": 2}), None)])
    later = MemoryFilter(tags=("later",))
    assert ids(index.search(IndexQuery("t1", later, 5, text="embedded")).keyword) == ["m1"]
    hits = index.search(IndexQuery("t1", later, 5, vector=E[1]))
    assert hits.vector == [("m1", pytest.approx(1.0, abs=1e-5))] and hits.vector_cues == {"m1": 1}
    assert index.count("t1") == 1

"""The MemoryIndex contract for recall cues (`Memory.cues`): every index adapter must pass these unchanged.

A memory's cues are indexed beside its content: their words in the keyword channel at `CUE_WEIGHT`
(BM25 as `rearview.text.bm25` scores it), their vectors in the vector channel, where a memory scores the
best cosine of its content and (with `IndexQuery.match_cues`) its cues, and `ChannelHits.vector_cues`
names the cue that carried it. Writes follow `IndexDocument.cue_vectors`.
"""

from __future__ import annotations

import numpy as np
import pytest

from rearview.models import Cue, Memory, MemoryFilter, MemoryStatus
from rearview.ports import CONTEXT_WEIGHT, CUE_WEIGHT, IndexDocument, IndexQuery, MemoryIndex, Vector
from rearview.text.bm25 import bm25_rank_fields
from rearview.text.fts_terms import text_terms
from tests.contract.conftest import DIMENSION
from tests.factories import make_memory, unit_vector

E = np.eye(DIMENSION, dtype=np.float32)


def _q(tenant: str = "t1", **kw: object) -> IndexQuery:
    return IndexQuery(
        tenant_id=tenant, filter=kw.pop("filter", MemoryFilter()), limit=kw.pop("limit", 10), **kw
    )  # type: ignore[arg-type]


def _cued(memory: Memory, *cues: str) -> Memory:
    return memory.model_copy(update={"cues": [Cue(text=text, by="agent1") for text in cues]})


def _unit(*parts: tuple[int, float]) -> Vector:
    v = sum((np.float32(w) * E[i] for i, w in parts), np.zeros(DIMENSION, np.float32))
    return (v / np.linalg.norm(v)).astype(np.float32)


def _ids(hits: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in hits]


def test_a_word_only_in_a_cue_finds_the_memory_at_cue_weight(index: MemoryIndex) -> None:
    """BM25 over three fields: a word counts fully in the content, at `CUE_WEIGHT` in a cue, at
    `CONTEXT_WEIGHT` in the context; lengths and document frequencies count every field; another
    tenant's cues move nothing."""
    rows: dict[str, tuple[str, str, list[str]]] = {
        "own": ("puppy walk", "", []),
        "cue": ("morning walk", "", ["puppy"]),
        "ctx": ("evening walk", "puppy", []),
        "both": ("a long walk by the sea", "", ["where did we walk the puppy?", "puppy training"]),
    }
    rows.update({f"filler{i}": (f"a quiet evening {i}", "", ["what did we do"]) for i in range(8)})
    docs = [
        IndexDocument(
            _cued(make_memory(text, memory_id=mid), *cues),
            unit_vector(n),
            context=ctx or None,
            cue_vectors=np.stack([unit_vector(100 + k) for k in range(len(cues))]) if cues else None,
        )
        for n, (mid, (text, ctx, cues)) in enumerate(rows.items())
    ]
    theirs = _cued(make_memory("nothing here", tenant_id="t2", memory_id="theirs"), "puppy puppy walk")
    docs.append(IndexDocument(theirs, unit_vector(99), cue_vectors=unit_vector(98)[None, :]))
    index.upsert(docs)

    corpus = [
        (mid, text_terms(text), text_terms(ctx), text_terms("\n".join(cues)))
        for mid, (text, ctx, cues) in rows.items()
    ]
    for text in ("puppy", "puppy walk", "walk the puppy"):
        expected = bm25_rank_fields(corpus, text, 10, CONTEXT_WEIGHT, CUE_WEIGHT)
        hits = index.search(_q(text=text)).keyword
        assert _ids(hits) == _ids(expected), text
        assert [s for _, s in hits] == pytest.approx([s for _, s in expected], rel=1e-6), text
    puppy = _ids(index.search(_q(text="puppy")).keyword)
    assert puppy.index("own") < puppy.index("cue") < puppy.index("ctx")
    assert _ids(index.search(_q("t2", text="puppy")).keyword) == ["theirs"]


def test_the_vector_channel_takes_the_best_of_content_and_cues_and_names_the_cue(index: MemoryIndex) -> None:
    a = _cued(make_memory("alpha", memory_id="a"), "first cue", "second cue")
    b = make_memory("beta", memory_id="b")
    c = _cued(make_memory("gamma", memory_id="c"), "far cue")
    index.upsert(
        [
            IndexDocument(a, E[0], cue_vectors=np.stack([E[1], _unit((2, 1.0), (3, 0.2))])),
            IndexDocument(b, _unit((2, 1.0), (4, 1.0))),
            IndexDocument(c, _unit((2, 1.0), (5, 0.5)), cue_vectors=E[6][None, :]),
        ]
    )
    hits = index.search(_q(vector=E[2]))
    assert _ids(hits.vector) == ["a", "c", "b"]
    assert [s for _, s in hits.vector] == pytest.approx(
        [1 / np.sqrt(1.04), 2 / np.sqrt(5), 1 / np.sqrt(2)], abs=1e-3
    )
    assert hits.vector_cues == {"a": 1}  # b and c: their content carried them

    on_a_cue = index.search(_q(vector=E[1], limit=1))
    assert on_a_cue.vector == [("a", pytest.approx(1.0, abs=1e-3))] and on_a_cue.vector_cues == {"a": 0}
    assert index.search(_q(vector=E[0], limit=1)).vector_cues == {}  # a's content

    content_only = index.search(_q(vector=E[2], match_cues=False))
    assert _ids(content_only.vector) == ["c", "b", "a"]
    assert content_only.vector[2][1] == pytest.approx(0.0, abs=1e-3)  # a's content alone
    assert content_only.vector_cues == {}


def test_the_vector_channel_returns_the_limit_best_by_content_or_cue(index: MemoryIndex) -> None:
    """Random memories with 0 to 3 cues: each limit returns the best by max(content, best cue), exactly."""
    rng = np.random.default_rng(21)

    def unit(n: int) -> Vector:
        raw = rng.standard_normal((n, DIMENSION)).astype(np.float32)
        return raw / np.linalg.norm(raw, axis=1, keepdims=True)

    docs = []
    for i in range(60):
        cues = int(rng.integers(0, 4))
        memory = _cued(
            make_memory(f"note {i}", memory_id=f"m{i:02d}"), *(f"cue {i} {n}" for n in range(cues))
        )
        docs.append(IndexDocument(memory, unit(1)[0], cue_vectors=unit(cues) if cues else None))
    index.upsert(docs)
    query = unit(1)[0]
    best: dict[str, tuple[float, int | None]] = {}
    for d in docs:
        assert d.vector is not None
        score, carrier = float(d.vector @ query), None
        if d.cue_vectors is not None:
            sims = d.cue_vectors @ query
            if float(sims.max()) > score:
                score, carrier = float(sims.max()), int(sims.argmax())
        best[d.memory.id] = (score, carrier)
    ranked = sorted(best, key=lambda i: -best[i][0])
    for limit in (1, 5, 20):
        hits = index.search(_q(vector=query, limit=limit))
        assert _ids(hits.vector) == ranked[:limit], limit
        assert [s for _, s in hits.vector] == pytest.approx([best[i][0] for i in ranked[:limit]], abs=1e-3)
        expected = {i: best[i][1] for i in ranked[:limit] if best[i][1] is not None}
        assert hits.vector_cues == expected, limit


def test_a_vector_less_update_keeps_the_cues(index: MemoryIndex) -> None:
    m = _cued(make_memory("the trip", memory_id="m1"), "lighthouse keeper")
    index.upsert([IndexDocument(m, E[0], cue_vectors=E[1][None, :])])
    moved = m.model_copy(update={"tags": ["kept"], "status": MemoryStatus.SUPERSEDED, "version": 2})
    index.upsert([IndexDocument(moved, None)])  # cue_vectors None: the indexed cues stay
    kept = MemoryFilter(tags=("kept",), statuses=(MemoryStatus.SUPERSEDED,))
    assert _ids(index.search(_q(filter=kept, text="lighthouse")).keyword) == ["m1"]
    hits = index.search(_q(filter=kept, vector=E[1]))
    assert hits.vector == [("m1", pytest.approx(1.0, abs=1e-3))] and hits.vector_cues == {"m1": 0}
    assert index.search(_q(filter=kept, vector=E[0])).vector == [("m1", pytest.approx(1.0, abs=1e-3))]
    assert index.versions("t1").items == [("m1", 2)]


def test_a_cue_only_update_replaces_the_cues_and_keeps_the_content_vector(index: MemoryIndex) -> None:
    m = _cued(make_memory("the trip", memory_id="m1"), "lighthouse keeper")
    index.upsert([IndexDocument(m, E[0], cue_vectors=E[1][None, :])])
    recued = _cued(m, "harbour crane", "old pier").model_copy(update={"version": 2})
    index.upsert([IndexDocument(recued, None, cue_vectors=np.stack([E[2], E[3]]))])
    assert index.search(_q(text="lighthouse")).keyword == []
    assert _ids(index.search(_q(text="crane")).keyword) == ["m1"]
    assert _ids(index.search(_q(text="trip")).keyword) == ["m1"]  # the content's words stay
    on_pier = index.search(_q(vector=E[3]))
    assert on_pier.vector == [("m1", pytest.approx(1.0, abs=1e-3))] and on_pier.vector_cues == {"m1": 1}
    on_old_cue = index.search(_q(vector=E[1]))
    assert on_old_cue.vector == [("m1", pytest.approx(0.0, abs=1e-3))] and on_old_cue.vector_cues == {}
    on_content = index.search(_q(vector=E[0]))
    assert on_content.vector == [("m1", pytest.approx(1.0, abs=1e-3))] and on_content.vector_cues == {}
    assert index.versions("t1").items == [("m1", 2)]

    # Ignored like any vector-less update: for an absent memory, other content, an older version.
    absent = _cued(make_memory("ghost", memory_id="absent"), "walrus")
    other = _cued(make_memory("other words", memory_id="m1", version=3), "walrus")
    older = _cued(m, "walrus")  # version 1
    for doc in (absent, other, older):
        index.upsert([IndexDocument(doc, None, cue_vectors=E[4][None, :])])
    assert index.search(_q(text="walrus")).keyword == []
    assert index.search(_q(vector=E[4])).vector_cues == {}
    assert index.count("t1") == 1 and index.versions("t1").items == [("m1", 2)]

    # An empty list removes them.
    uncued = recued.model_copy(update={"cues": [], "version": 4})
    index.upsert([IndexDocument(uncued, None, cue_vectors=np.zeros((0, DIMENSION), np.float32))])
    assert index.search(_q(text="crane")).keyword == []
    gone = index.search(_q(vector=E[3]))
    assert gone.vector == [("m1", pytest.approx(0.0, abs=1e-3))] and gone.vector_cues == {}
    assert index.search(_q(vector=E[0])).vector == [("m1", pytest.approx(1.0, abs=1e-3))]


def test_a_document_written_with_its_vector_and_no_cue_vectors_has_no_cues(index: MemoryIndex) -> None:
    m = _cued(make_memory("the trip", memory_id="m1"), "lighthouse keeper")
    index.upsert([IndexDocument(m, E[0], cue_vectors=E[1][None, :])])
    index.upsert([IndexDocument(m.model_copy(update={"version": 2}), E[0])])
    assert index.search(_q(text="lighthouse")).keyword == []
    hits = index.search(_q(vector=E[1]))
    assert hits.vector == [("m1", pytest.approx(0.0, abs=1e-3))] and hits.vector_cues == {}


def test_cues_stay_within_their_tenant(index: MemoryIndex) -> None:
    index.upsert(
        [
            IndexDocument(make_memory("a note", memory_id="mine"), E[0]),
            IndexDocument(
                _cued(make_memory("a note", tenant_id="t2", memory_id="theirs"), "lighthouse keeper"),
                E[5],
                cue_vectors=E[1][None, :],
            ),
        ]
    )
    assert index.search(_q(text="lighthouse")).keyword == []
    mine = index.search(_q(vector=E[1]))
    assert _ids(mine.vector) == ["mine"] and mine.vector_cues == {}
    theirs = index.search(_q("t2", vector=E[1], text="lighthouse"))
    assert _ids(theirs.keyword) == ["theirs"]
    assert theirs.vector == [("theirs", pytest.approx(1.0, abs=1e-3))] and theirs.vector_cues == {"theirs": 0}
    index.delete("t1", ["theirs"])  # another tenant cannot delete t2's document
    assert _ids(index.search(_q("t2", vector=E[1])).vector) == ["theirs"]


def test_filters_apply_to_cue_matches(index: MemoryIndex) -> None:
    """A memory outside the filter is not found through its cues, in either channel."""
    index.upsert(
        [
            IndexDocument(
                _cued(make_memory("first", memory_id="in", tags=["x"]), "lighthouse"),
                E[0],
                cue_vectors=E[1][None, :],
            ),
            IndexDocument(
                _cued(make_memory("second", memory_id="out"), "lighthouse"), E[0], cue_vectors=E[1][None, :]
            ),
            IndexDocument(
                _cued(
                    make_memory("third", memory_id="old", tags=["x"], status=MemoryStatus.SUPERSEDED),
                    "lighthouse",
                ),
                E[0],
                cue_vectors=E[1][None, :],
            ),
        ]
    )
    hits = index.search(_q(filter=MemoryFilter(tags=("x",)), vector=E[1], text="lighthouse"))
    assert _ids(hits.keyword) == ["in"]
    assert hits.vector == [("in", pytest.approx(1.0, abs=1e-3))] and hits.vector_cues == {"in": 0}
    assert index.search(_q(filter=MemoryFilter(tags=("y",)), vector=E[1], text="lighthouse")).vector == []


def test_a_small_scope_in_a_large_index_still_gets_limit_cue_matches(index: MemoryIndex) -> None:
    """Cues nearer the query in another tenant, or outside the filter, never crowd out the scope's matches."""
    near = _unit((1, 1.0), (2, 0.05))
    big = [
        IndexDocument(
            _cued(make_memory(f"noise {i}", tenant_id="big", memory_id=f"n{i}"), "near cue"),
            unit_vector(i),
            cue_vectors=near[None, :],
        )
        for i in range(300)
    ]
    untagged = [
        IndexDocument(
            _cued(make_memory(f"plain {i}", memory_id=f"u{i}"), "near cue"),
            unit_vector(500 + i),
            cue_vectors=near[None, :],
        )
        for i in range(100)
    ]
    small = [
        IndexDocument(
            _cued(make_memory(f"mine {i}", memory_id=f"s{i}", tags=["mine"]), "my cue"),
            unit_vector(10_000 + i),
            cue_vectors=unit_vector(20_000 + i)[None, :],
        )
        for i in range(5)
    ]
    index.upsert(big + untagged + small)
    hits = index.search(_q(filter=MemoryFilter(tags=("mine",)), vector=E[1], limit=5))
    best = {}
    for d in small:
        assert d.vector is not None and d.cue_vectors is not None
        content, cue = float(d.vector @ E[1]), float(d.cue_vectors[0] @ E[1])
        best[d.memory.id] = (max(content, cue), cue > content)
    assert _ids(hits.vector) == sorted(best, key=lambda i: -best[i][0])
    assert hits.vector_cues == {i: 0 for i, (_, by_cue) in best.items() if by_cue}

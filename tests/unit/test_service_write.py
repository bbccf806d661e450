"""The write path: dedup, near-duplicate merge, supersede, idempotency, validation."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rearview.errors import InvalidInputError
from rearview.limits import MAX_CONTENT_CHARS
from rearview.models import (
    HistoryAction,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
    SearchRequest,
    Visibility,
    WriteAction,
    WriteRequest,
)
from rearview.service.memory_service import MemoryService
from tests.factories import T0


def test_exact_duplicate_is_merged_not_inserted(service: MemoryService) -> None:
    first = service.write("t1", WriteRequest(content="User prefers tea.", tags=["a"], importance=2))
    second = service.write("t1", WriteRequest(content="  user PREFERS tea ", tags=["b"], importance=4))
    assert first.action is WriteAction.CREATED
    assert second.action is WriteAction.MERGED
    assert second.merged_into == first.memory.id
    assert second.similarity == 1.0
    assert service.store.stats("t1").total == 1
    merged = service.get("t1", first.memory.id)
    assert merged.tags == ["a", "b"] and merged.importance == 4 and merged.strength > first.memory.strength
    assert merged.version == 2
    actions = [e.action for e in service.history("t1", merged.id).events]
    assert actions == [HistoryAction.CREATED, HistoryAction.MERGED]


def test_near_duplicate_is_merged_above_threshold_only(service: MemoryService) -> None:
    first = service.write("t1", WriteRequest(content="The user prefers green tea in the morning"))
    near = service.write("t1", WriteRequest(content="The user prefers green tea in the mornings"))
    other = service.write("t1", WriteRequest(content="Deployments run through the staging cluster first"))
    assert near.action is WriteAction.MERGED and near.merged_into == first.memory.id
    assert near.similarity is not None and 0.93 <= near.similarity < 1.0
    assert other.action is WriteAction.CREATED


def test_duplicates_are_scoped(service: MemoryService) -> None:
    service.write("t1", WriteRequest(content="Uses vim", visibility=Visibility.PRIVATE, agent_id="a1"))
    other_agent = service.write(
        "t1", WriteRequest(content="Uses vim", visibility=Visibility.PRIVATE, agent_id="a2")
    )
    other_type = service.write("t1", WriteRequest(content="Uses vim", type=MemoryType.PROCEDURAL))
    other_tenant = service.write(
        "t2", WriteRequest(content="Uses vim", visibility=Visibility.PRIVATE, agent_id="a1")
    )
    assert {other_agent.action, other_type.action, other_tenant.action} == {WriteAction.CREATED}


def test_supersede_retires_old_memory_but_keeps_it_in_history(service: MemoryService) -> None:
    old = service.write("t1", WriteRequest(content="User lives in Berlin"))
    new = service.write("t1", WriteRequest(content="User moved to Lisbon", supersedes=old.memory.id))
    assert new.action is WriteAction.SUPERSEDED and new.superseded_ids == [old.memory.id]
    retired = service.get("t1", old.memory.id)
    assert retired.status is MemoryStatus.SUPERSEDED and retired.superseded_by == new.memory.id
    found = service.search("t1", SearchRequest(query="where does the user live Berlin Lisbon"))
    assert [h.id for h in found.results] == [new.memory.id]
    with_old = service.search(
        "t1",
        SearchRequest(
            query="Berlin", filter=MemoryFilter(statuses=(MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED))
        ),
    )
    assert old.memory.id in [h.id for h in with_old.results]
    assert service.history("t1", old.memory.id).events[-1].action is HistoryAction.SUPERSEDED


def test_supersede_of_unknown_or_inactive_memory_writes_nothing(service: MemoryService) -> None:
    with pytest.raises(InvalidInputError) as exc:
        service.write("t1", WriteRequest(content="x", supersedes="01ABSENT"))
    assert exc.value.field == "supersedes"
    old = service.write("t1", WriteRequest(content="a fact"))
    service.write("t1", WriteRequest(content="a better fact", supersedes=old.memory.id))
    with pytest.raises(InvalidInputError):
        service.write("t1", WriteRequest(content="third try", supersedes=old.memory.id))
    assert service.store.stats("t1").total == 2


def test_idempotency_key_replays_the_first_result(service: MemoryService) -> None:
    first = service.write("t1", WriteRequest(content="Ran migration 42", idempotency_key="k1"))
    again = service.write("t1", WriteRequest(content="Ran migration 42 (retry)", idempotency_key="k1"))
    assert again.idempotent_replay and again.memory.id == first.memory.id
    assert service.store.stats("t1").total == 1


@pytest.mark.parametrize(
    ("request_kwargs", "field"),
    [
        ({"content": "   "}, "content"),
        ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "content"),
        ({"content": "ok", "tags": ["t"] * 1 + [f"t{i}" for i in range(40)]}, "tags"),
        ({"content": "ok", "metadata": {"k": "v" * 600}}, "metadata.k"),
        ({"content": "ok", "ttl_days": 0}, "ttl_days"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(
    service: MemoryService, request_kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInputError) as exc:
        service.write("t1", WriteRequest.model_validate(request_kwargs))
    assert exc.value.field == field
    assert service.store.stats("t1").total == 0
    assert service.index.count("t1") == 0


def test_retention_sets_expiry_from_importance_type_and_ttl(service: MemoryService) -> None:
    def expiry(**kw: object) -> timedelta | None:
        view = service.write("t1", WriteRequest.model_validate({"content": f"c {kw}", **kw})).memory
        return None if view.expires_at is None else view.expires_at - T0

    assert expiry(importance=5) is None
    assert expiry(importance=1) == timedelta(days=7)
    assert expiry(importance=3) == timedelta(days=180)
    assert expiry(type="working", importance=5) == timedelta(days=1)
    assert expiry(ttl_days=2.5, importance=5) == timedelta(days=2.5)


def test_a_concurrent_retry_with_the_same_idempotency_key_gets_the_first_result(
    service: MemoryService,
) -> None:
    """Two retries race past the replay check; the store's key guard makes the loser replay."""
    from rearview.errors import ConflictError
    from rearview.ports import StoreWrite

    class RacingStore:
        """Lets the first lookup miss (the winner has not committed yet), then behaves normally."""

        def __init__(self, inner: object) -> None:
            self.inner = inner
            self.misses = 1

        def find_by_idempotency_key(self, tenant_id: str, key: str) -> object:
            if self.misses:
                self.misses -= 1
                return None
            return self.inner.find_by_idempotency_key(tenant_id, key)  # type: ignore[attr-defined]

        def commit(self, writes: list[StoreWrite]) -> None:
            if any(w.memory.idempotency_key for w in writes):
                raise ConflictError(writes[0].memory.id, None, 1)  # the key is taken
            self.inner.commit(writes)  # type: ignore[attr-defined]

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    first = service.write("t1", WriteRequest(content="Ran migration 42", idempotency_key="k1"))
    racing = MemoryService(RacingStore(service.store), service.index, service.embedder, service.clock)  # type: ignore[arg-type]
    again = racing.write("t1", WriteRequest(content="Ran migration 42 again", idempotency_key="k1"))
    assert again.idempotent_replay and again.memory.id == first.memory.id

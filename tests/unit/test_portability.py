"""Export records restore exactly (ids, versions, history), refuse to overwrite, and index best-effort."""

from __future__ import annotations

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.errors import InvalidInputError
from rearview.models import UpdateRequest, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.service.portability import ExportRecord, Restorer, export_tenant
from rearview.shared.clock import ManualClock
from rearview.testing import BrokenEmbedder


def _records(service: MemoryService) -> list[ExportRecord]:
    written = service.write("t1", WriteRequest(content="The build needs Python 3.11", tags=["ci"]))
    service.update("t1", UpdateRequest(memory_id=written.memory.id, importance=5))
    service.write("t1", WriteRequest(content="Reviews happen on Tuesdays"))
    return list(export_tenant(service.store, "t1"))


def test_a_restore_is_exact_and_a_second_one_changes_nothing(
    service: MemoryService, clock: ManualClock
) -> None:
    records = _records(service)
    target = MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(256), service.embedder, clock)
    restorer = Restorer(target)
    for record in records:
        restorer.restore(record)
    restorer.flush()

    assert list(export_tenant(target.store, "t1")) == records
    updated = next(r for r in records if r.memory.content.startswith("The build"))
    assert [e.action for e in updated.history] == ["created", "updated"] and updated.memory.version == 2
    assert target.index.count("t1") == 2 and restorer.unindexed == 0
    again = restorer.restore(records[0])
    assert again.present and list(export_tenant(target.store, "t1")) == records
    changed = records[0].model_copy(
        update={"memory": records[0].memory.model_copy(update={"content": "Other"})}
    )
    with pytest.raises(InvalidInputError, match="already exists in tenant `t1` with other content"):
        restorer.restore(changed)


def test_a_restore_moves_to_another_tenant_and_survives_a_broken_embedder(
    service: MemoryService, clock: ManualClock
) -> None:
    records = _records(service)
    target = MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(8), BrokenEmbedder(8), clock)
    restorer = Restorer(target)
    for record in records:
        restorer.restore(record, tenant_id="t2")
    restorer.flush()

    moved = list(export_tenant(target.store, "t2"))
    assert [r.memory.id for r in moved] == [r.memory.id for r in records]
    assert {e.tenant_id for r in moved for e in r.history} == {"t2"}
    assert restorer.unindexed == 2 and target.index.count("t2") == 0
    assert list(export_tenant(target.store, "t1")) == []

"""Export records restore exactly (ids, versions, history), refuse to overwrite, and index best-effort."""

from __future__ import annotations

from pathlib import Path

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.cli.import_file import lines
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


def test_verified_at_round_trips_through_get_export_and_import(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    """Issue 47: a verification (who, when, its history event) survives export -> file -> import."""
    written = service.write("t1", WriteRequest(content="The on-call rota changes on Mondays"))
    clock.advance(days=3)
    verified = service.update("t1", UpdateRequest(memory_id=written.memory.id, verified=True, agent_id="ops"))
    assert (verified.verified_at, verified.verified_by) == (clock.now(), "ops")
    path = tmp_path / "export.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in export_tenant(service.store, "t1")))

    target = MemoryService(
        SQLiteMemoryStore(tmp_path / "store.sqlite3", clock),
        SQLiteMemoryIndex(tmp_path / "index.sqlite3", service.embedder.dimension),
        service.embedder,
        clock,
    )
    target.store.ensure_schema()
    target.index.ensure_schema()
    restorer = Restorer(target)
    for _, line in lines(path):
        assert isinstance(line, ExportRecord)
        restorer.restore(line)
    restorer.flush()

    got = target.get("t1", written.memory.id)
    assert (got.verified_at, got.verified_by) == (clock.now(), "ops")
    assert [e.action for e in target.history("t1", written.memory.id).events] == ["created", "verified"]
    assert list(export_tenant(target.store, "t1")) == list(export_tenant(service.store, "t1"))

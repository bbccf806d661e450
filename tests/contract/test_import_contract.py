"""`import --from` on every store: a record is already imported only when its text is stored there.

Each user of a multi-user export stays apart (a private agent, or a tenant of their own), and a
record keeps its source's creation time (age, decay and retention count from it).

The runner finds what a source id stored through the store's idempotency keys (a superseded first
version included), its history and its hash lookup: each store must answer them alike.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from rearview.backends.memory import InMemoryMemoryIndex
from rearview.embedders.hashing import HashingEmbedder
from rearview.importers import ImportReport, ImportRunner, read_source
from rearview.importers.command import import_from
from rearview.importers.users import PerUser
from rearview.models import MemoryFilter, MemoryStatus
from rearview.ports import MemoryStore
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock


def _import(service: MemoryService, path: Path, records: list[dict[str, object]]) -> ImportReport:
    path.write_text(json.dumps({"results": records}))
    return ImportRunner(service, "t1").run(read_source("mem0", path))


def _texts(store: MemoryStore, status: MemoryStatus) -> set[str]:
    return {m.content for m in store.list_memories("t1", MemoryFilter(statuses=(status,)), limit=50).items}


def test_changed_and_id_less_records_are_stored_once(
    store: MemoryStore, clock: ManualClock, tmp_path: Path
) -> None:
    service = MemoryService(store, InMemoryMemoryIndex(64), HashingEmbedder(64), clock, ServiceConfig())
    one = [{"memory": "User one lives in Lyon"}, {"id": "m-1", "memory": "Prefers tea"}]
    two = [{"memory": "User two takes warfarin daily"}, {"id": "m-1", "memory": "Prefers coffee"}]
    assert _import(service, tmp_path / "one.json", one).counts == {"created": 2}
    assert _import(service, tmp_path / "two.json", two).counts == {"created": 1, "updated": 1}
    assert _texts(store, MemoryStatus.ACTIVE) == {
        "User one lives in Lyon", "User two takes warfarin daily", "Prefers coffee",
    }  # fmt: skip
    assert _texts(store, MemoryStatus.SUPERSEDED) == {"Prefers tea"}
    assert _import(service, tmp_path / "two.json", two).counts == {"already imported": 2}
    assert _import(service, tmp_path / "one.json", one).counts == {"already imported": 1, "updated": 1}
    assert "Prefers tea" in _texts(store, MemoryStatus.ACTIVE)


def test_users_kept_apart_and_created_at_kept_on_every_store(
    store: MemoryStore, clock: ManualClock, tmp_path: Path
) -> None:
    service = MemoryService(store, InMemoryMemoryIndex(64), HashingEmbedder(64), clock, ServiceConfig())
    born = clock.now() - timedelta(days=30)
    export = tmp_path / "two.json"
    export.write_text(
        json.dumps(
            [
                {
                    "id": "a",
                    "memory": "My cat is called Nori.",
                    "user_id": "alice",
                    "created_at": born.isoformat(),
                },
                {
                    "id": "b",
                    "memory": "My cat is called Mochi.",
                    "user_id": "bob",
                    "created_at": born.isoformat(),
                },
            ]
        )
    )
    import_from(service, "mem0", export, "t1", PerUser.AGENT)
    as_alice = store.list_memories("t1", MemoryFilter(agent_id="alice"), limit=10).items
    assert [(m.content, m.created_at, m.last_accessed_at) for m in as_alice] == [
        ("My cat is called Nori.", born, born)
    ]
    assert as_alice[0].expires_at == born + timedelta(days=180)
    import_from(service, "mem0", export, "t2", PerUser.TENANT)
    assert [m.content for m in store.list_memories("bob", MemoryFilter(), limit=10).items] == [
        "My cat is called Mochi."
    ]

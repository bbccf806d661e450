"""`rearview import --from`: a run reports only what it stored; a record's identity includes its text.

A source id alone (`mem0:<id>`, or `mem0:#1` for a record without one) does not say a record was
imported: two users' files both have a first record, a re-export may carry new text under the same
id, one file may hold one id twice. Each of those is stored (a changed record as an update of what
its earlier version stored), and a second run of the same file still writes nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rearview.bootstrap import build_service
from rearview.config.settings import Settings
from rearview.importers import ImportReport, ImportRunner, read_source
from rearview.models import MemoryFilter, MemoryStatus
from rearview.service.memory_service import MemoryService

TENANT = "local"
EVERY = MemoryFilter(statuses=tuple(MemoryStatus))
REAL_MEM0 = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "mem0_export.json"


@pytest.fixture
def service(tmp_path: Path) -> MemoryService:
    return build_service(Settings.load(data_dir=tmp_path, embedder="hashing", near_duplicate_threshold=1.01))


def _file(tmp_path: Path, name: str, records: list[dict[str, object]], key: str = "results") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({key: records}))
    return path


def _import(service: MemoryService, source: str, path: Path) -> ImportReport:
    return ImportRunner(service, TENANT).run(read_source(source, path))


def _texts(service: MemoryService, status: MemoryStatus = MemoryStatus.ACTIVE) -> set[str]:
    page = service.store.list_memories(TENANT, MemoryFilter(statuses=(status,)), limit=200)
    return {m.content for m in page.items}


def _versions(service: MemoryService) -> dict[str, int]:
    return {m.id: m.version for m in service.store.list_memories(TENANT, EVERY, limit=200).items}


def test_two_users_files_without_ids_are_both_stored(service: MemoryService, tmp_path: Path) -> None:
    one = _file(tmp_path, "one.json", [
        {"memory": "User one is allergic to penicillin", "user_id": "one"},
        {"memory": "User one lives in Lyon", "user_id": "one"},
    ])  # fmt: skip
    two = _file(tmp_path, "two.json", [
        {"memory": "User two takes warfarin daily", "user_id": "two"},
        {"memory": "User two lives in Oslo", "user_id": "two"},
    ])  # fmt: skip
    assert _import(service, "mem0", one).counts == {"created": 2}
    second = _import(service, "mem0", two)
    assert second.counts == {"created": 2}
    assert {"User two takes warfarin daily", "User two lives in Oslo"} <= _texts(service)
    before = _versions(service)
    assert _import(service, "mem0", two).counts == {"already imported": 2}
    assert _import(service, "mem0", one).counts == {"already imported": 2}
    assert _versions(service) == before


def test_a_record_re_exported_with_new_text_updates_its_memory(
    service: MemoryService, tmp_path: Path
) -> None:
    old = _file(tmp_path, "old.json", [{"id": "m-1", "memory": "Lives in Lyon", "user_id": "alice"}])
    new = _file(tmp_path, "new.json", [{"id": "m-1", "memory": "Lives in Porto", "user_id": "alice"}])
    assert _import(service, "mem0", old).counts == {"created": 1}
    assert _import(service, "mem0", new).counts == {"updated": 1}
    assert _texts(service) == {"Lives in Porto"}
    assert _texts(service, MemoryStatus.SUPERSEDED) == {"Lives in Lyon"}
    before = _versions(service)
    assert _import(service, "mem0", new).counts == {"already imported": 1}
    assert _versions(service) == before
    # Back to the first text: the record changed again, and its memory follows.
    assert _import(service, "mem0", old).counts == {"updated": 1}
    assert _texts(service) == {"Lives in Lyon"}


def test_two_records_with_one_id_in_a_file_are_both_stored(service: MemoryService, tmp_path: Path) -> None:
    both = _file(tmp_path, "both.json", [
        {"id": "m-1", "memory": "Prefers tea", "user_id": "alice"},
        {"id": "m-1", "memory": "Prefers window seats", "user_id": "bob"},
    ])  # fmt: skip
    assert _import(service, "mem0", both).counts == {"created": 2}
    assert _texts(service) == {"Prefers tea", "Prefers window seats"}
    before = _versions(service)
    assert _import(service, "mem0", both).counts == {"already imported": 2}
    assert _versions(service) == before


def test_two_letta_passage_files_are_both_stored(service: MemoryService, tmp_path: Path) -> None:
    first = _file(tmp_path, "a.json", [{"text": "Chad's sister Ana lives in Porto"}], key="passages")
    second = _file(tmp_path, "b.json", [{"text": "Chad is training for a marathon"}], key="passages")
    assert _import(service, "letta", first).counts == {"created": 1}
    assert _import(service, "letta", second).counts == {"created": 1}
    assert _texts(service) == {"Chad's sister Ana lives in Porto", "Chad is training for a marathon"}
    assert _import(service, "letta", second).counts == {"already imported": 1}


def test_a_real_mem0_export_of_two_users_is_stored_whole_once(service: MemoryService, tmp_path: Path) -> None:
    records = json.loads(REAL_MEM0.read_text())["results"]
    report = _import(service, "mem0", REAL_MEM0)
    assert report.counts.get("created", 0) + report.counts.get("merged", 0) == len(records) == 20
    assert {r["memory"] for r in records} <= _texts(service)
    # The same memories exported without their ids (one file per user): nothing is lost, nothing doubled.
    for user in ("alice", "bob"):
        mine = [{k: v for k, v in r.items() if k != "id"} for r in records if r["user_id"] == user]
        again = _import(service, "mem0", _file(tmp_path, f"{user}.json", mine))
        assert again.written == 0 or again.counts == {"merged": len(mine)}, again.counts
    assert {r["memory"] for r in records} <= _texts(service)
    shutil.copy(REAL_MEM0, tmp_path / "copy.json")
    assert _import(service, "mem0", tmp_path / "copy.json").counts == {"already imported": 20}

"""`rearview import --from SOURCE`: other memory systems' exports, through the write path, once.

Fixture provenance (tests/fixtures/importers/):
- mem0.json: the shape of `Memory.get_all()` in mem0ai 2.2.1 (`mem0/memory/main.py`,
  `_get_all_from_vector_store`: id, memory, hash, created_at, updated_at, metadata, the promoted keys
  user_id/agent_id/run_id/actor_id/role/expiration_date), plus the platform's `categories`
  (`mem0/client/main.py` returns the server's records as they are). Installed offline and read.
- openmemory.json: OpenMemory is not on PyPI (the `openmemory` 0.1.0 wheel is an empty placeholder):
  the shape follows its API's models as published in mem0's repository (`openmemory/api/app/models.py`:
  Memory id/user_id/app_id/content/metadata_/state active|paused|archived|deleted/created_at/
  archived_at/deleted_at, App name, Category name), written from that description, not generated.
- graphiti.json: graphiti-core 0.31.2 models (`graphiti_core/edges.py` EntityEdge, `nodes.py`
  EpisodicNode), as `model_dump(mode="json")` writes them (fact_embedding left out). Installed offline.
- letta.af: the agent file layout (agents with block_ids, blocks with label/value) and the Passage
  model of letta-client 1.12.1 (`letta_client/types/passage.py`, `types/agents/block.py`). The
  `letta` 0.34 wheel is now Letta Code (a JS app) and ships no server schemas.
- mempalace/: what mempalace 3.11.0 `exporter.export_palace` writes (`mempalace/exporter.py`):
  index.md and <wing>/<room>.md, one `## <id>` section per drawer, quoted text, Source/Filed/Added by.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Literal

import pytest

from rearview.bootstrap import build_service
from rearview.config.settings import Settings
from rearview.errors import InvalidInputError
from rearview.importers import ImportReport, ImportRunner, read_source
from rearview.importers.records import Candidate
from rearview.models import Memory, MemoryFilter, MemoryStatus, MemoryType, SearchRequest
from rearview.service.memory_service import MemoryService

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
TENANT = "local"
EVERY = MemoryFilter(statuses=tuple(MemoryStatus))
KEEP_ALL: dict[int, float | Literal["forever"]] = dict.fromkeys(range(1, 6), "forever")
"""The fixtures are older than the default retention counted from their `created_at`: keep them all."""


@pytest.fixture
def service(tmp_path: Path) -> MemoryService:
    return build_service(
        Settings.load(
            data_dir=tmp_path, embedder="hashing", near_duplicate_threshold=1.01, retention_days=KEEP_ALL
        )
    )


def _import(service: MemoryService, source: str, name: str) -> ImportReport:
    return ImportRunner(service, TENANT).run(read_source(source, FIXTURES / name))


def _stored(service: MemoryService) -> dict[str, Memory]:
    """Every memory of the tenant by the source id it was imported from."""
    page = service.store.list_memories(TENANT, EVERY, limit=100)
    return {str(m.metadata["imported_from"]): m for m in page.items}


def _rerun_writes_nothing(service: MemoryService, source: str, name: str, imported: int) -> None:
    before = {m.id: m.version for m in _stored(service).values()}
    again = _import(service, source, name)
    assert again.counts == {"already imported": imported}
    assert {m.id: m.version for m in _stored(service).values()} == before


def test_mem0(service: MemoryService) -> None:
    report = _import(service, "mem0", "mem0.json")
    assert report.counts == {"created": 3, "merged": 1}
    assert [(s.source_id, s.reason) for s in report.skipped] == [
        ("mem0:0b1e6c1e-1111-4a1e-9c1e-000000000004", "expired on 2025-03-02 in mem0")
    ]
    stored = _stored(service)
    pnpm = stored["mem0:0b1e6c1e-1111-4a1e-9c1e-000000000005"]  # the duplicate merged: metadata has the last
    assert pnpm.tags == ["user:alice", "preferences", "tooling"] and pnpm.metadata["source"] == "email"
    acme = stored["mem0:0b1e6c1e-1111-4a1e-9c1e-000000000002"]
    assert (acme.agent_id, acme.session_id, acme.event_time.isoformat()) == (
        "support-bot", "run-42", "2026-01-07T08:30:00+00:00",
    )  # fmt: skip
    assert acme.metadata["actor_id"] == "alice" and acme.source.value == "import"
    assert stored["mem0:0b1e6c1e-1111-4a1e-9c1e-000000000003"].type is MemoryType.PROCEDURAL
    _rerun_writes_nothing(service, "mem0", "mem0.json", 4)


def test_openmemory(service: MemoryService) -> None:
    report = _import(service, "openmemory", "openmemory.json")
    assert report.counts == {"created": 2}
    assert {s.source_id: s.reason for s in report.skipped} == {
        "openmemory:m-3": "archived in OpenMemory",
        "openmemory:m-4": "deleted in OpenMemory",
    }
    stored = _stored(service)
    assert (stored["openmemory:m-1"].agent_id, stored["openmemory:m-1"].tags) == (
        "cursor",
        ["coding", "preferences"],
    )
    assert (stored["openmemory:m-2"].agent_id, stored["openmemory:m-2"].tags) == (
        "claude",
        ["travel", "paused"],
    )
    _rerun_writes_nothing(service, "openmemory", "openmemory.json", 2)


def test_graphiti_keeps_an_invalidated_fact_superseded_by_its_successor(service: MemoryService) -> None:
    report = _import(service, "graphiti", "graphiti.json")
    assert report.counts == {"created": 3, "superseded": 1}
    assert [s.source_id for s in report.skipped] == ["graphiti:e-3"]  # invalid, nothing replaces it
    assert "invalid since 2025-09-01T00:00:00+00:00" in report.skipped[0].reason
    stored = _stored(service)
    acme, globex = stored["graphiti:e-1"], stored["graphiti:e-2"]
    assert acme.status is MemoryStatus.SUPERSEDED and acme.superseded_by == globex.id
    assert globex.status is MemoryStatus.ACTIVE and globex.metadata["role"] == "staff engineer"
    assert globex.tags == ["relation:WORKS_AT", "group:alice"]
    assert stored["graphiti:ep-2"].type is MemoryType.EPISODIC
    found = service.search(TENANT, SearchRequest(query="where does Alice work"))
    assert [h.id for h in found.results if h.id in (acme.id, globex.id)] == [globex.id]
    _rerun_writes_nothing(service, "graphiti", "graphiti.json", 4)


def test_zep_reads_graphiti_facts_as_the_same_records(service: MemoryService) -> None:
    assert _import(service, "graphiti", "graphiti.json").counts == {"created": 3, "superseded": 1}
    before = {m.id: m.version for m in _stored(service).values()}
    assert _import(service, "zep", "graphiti.json").counts == {"already imported": 4}
    assert {m.id: m.version for m in _stored(service).values()} == before


def test_a_fact_an_earlier_zep_import_stored_is_found_by_its_old_id(service: MemoryService) -> None:
    records = list(read_source("graphiti", FIXTURES / "graphiti.json"))
    (globex,) = [r for r in records if isinstance(r, Candidate) and r.source_id == "graphiti:e-2"]
    ImportRunner(service, TENANT).run([replace(globex, source_id="zep:e-2", aliases=(), replaces=None)])
    report = _import(service, "graphiti", "graphiti.json")
    assert report.counts["already imported"] == 1  # not a second "Alice works at Globex"
    assert len(service.store.list_memories(TENANT, EVERY, limit=100).items) == 4


def test_letta(service: MemoryService) -> None:
    report = _import(service, "letta", "letta.af")
    assert report.counts == {"created": 5}
    assert [(s.source_id, s.reason) for s in report.skipped] == [("letta:passage-2", "deleted in Letta")]
    by_text = {m.content: m for m in _stored(service).values()}
    assert set(by_text) == {
        "Name: Chad", "Likes hiking on weekends", "Allergic to peanuts", "Answer briefly and warmly.",
        "Chad's sister Ana lives in Porto",
    }  # fmt: skip
    assert by_text["Allergic to peanuts"].agent_id == "companion"
    assert by_text["Answer briefly and warmly."].type is MemoryType.PROCEDURAL
    assert by_text["Chad's sister Ana lives in Porto"].tags == ["family"]
    _rerun_writes_nothing(service, "letta", "letta.af", 5)


def test_mempalace(service: MemoryService) -> None:
    report = _import(service, "mempalace", "mempalace")
    assert report.counts == {"created": 3} and not report.skipped and not report.refused
    stored = _stored(service)
    postgres = stored["mempalace:drawer_wing_code_decisions_a1b2c3d4e5f6a7b8c9d0e1f2"]
    assert (
        postgres.content
        == "We chose Postgres over MySQL for the billing service\nbecause we need transactional DDL."
    )
    assert postgres.tags == ["wing:wing_code", "room:decisions"] and postgres.type is MemoryType.EPISODIC
    assert postgres.event_time.isoformat() == "2026-02-10T14:03:22.120001+00:00"
    deploys = stored["mempalace:drawer_wing_code_decisions_00aa11bb22cc33dd44ee55ff"]
    assert deploys.agent_id == "claude-code" and "source_file" not in deploys.metadata
    _rerun_writes_nothing(service, "mempalace", "mempalace", 3)


def test_a_record_beyond_a_limit_is_refused_naming_the_field(service: MemoryService, tmp_path: Path) -> None:
    export = tmp_path / "mem0.jsonl"
    export.write_text(
        '{"id": "a", "memory": ""}\n{"id": "b", "memory": "ok", "created_at": "yesterday"}\n'
        '{"id": "c", "memory": "Likes tea"}\n'
    )
    report = ImportRunner(service, TENANT).run(read_source("mem0", export))
    assert report.counts == {"created": 1}
    assert {r.source_id: r.reason for r in report.refused} == {
        "mem0:a": "invalid `content`: must not be empty",
        "mem0:b": "invalid `created_at`: not an ISO-8601 timestamp: 'yesterday'",
    }


def test_the_cli_imports_from_mem0_once(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "rearview.cli", "--data-dir", str(tmp_path), "import", "--from", "mem0"]
    env = {
        "REARVIEW_EMBEDDER": "hashing", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
        "REARVIEW_RETENTION_DAYS": json.dumps(KEEP_ALL), "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }  # fmt: skip
    first = subprocess.run(
        [*command, str(FIXTURES / "mem0.json")], capture_output=True, text=True, env=env, check=False
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == (
        "mapped 4 into tenant 'local' (agents 'default', 'support-bot'): created 3, merged 1; skipped 1; refused 0"
    )
    assert "skipped mem0:0b1e6c1e-1111-4a1e-9c1e-000000000004: expired on 2025-03-02 in mem0" in first.stderr
    again = subprocess.run(
        [*command, str(FIXTURES / "mem0.json")], capture_output=True, text=True, env=env, check=False
    )
    assert again.stdout.strip() == (
        "mapped 4 into tenant 'local' (agents 'default', 'support-bot'): already imported 4; skipped 1; refused 0"
    )


LETTA_SECTIONS = {
    "# Role\nYou are the support agent of the Acme community server.",
    "# Admins\n1. Only admins may ban a member.\n2. Ask an admin before deleting a channel.",
    "**Boundaries**\n- Never share a member's email address.\n- Do not give legal advice.",
    "Name: Chad",
    "Likes hiking on weekends",
}


@pytest.mark.parametrize("name", ["letta_markdown.af", "letta_v1.af"])
def test_a_letta_markdown_block_is_one_memory_per_section_with_its_heading(
    service: MemoryService, name: str
) -> None:
    """Hand-built to mirror Letta's agent files: `agents` + `blocks` (v2), and the older agent object
    with `core_memory`, saved as a JSON string (the shape refused as "expected a list of JSON objects")."""
    report = _import(service, "letta", name)
    assert not report.refused and report.counts == {"created": 5}
    by_text = {m.content: m for m in _stored(service).values()}
    assert set(by_text) == LETTA_SECTIONS
    assert by_text["Likes hiking on weekends"].type is MemoryType.SEMANTIC
    assert all(by_text[t].type is MemoryType.PROCEDURAL for t in LETTA_SECTIONS if t[0] in "#*")


def test_a_top_level_json_string_that_is_no_agent_is_refused_saying_so(
    service: MemoryService, tmp_path: Path
) -> None:
    odd = tmp_path / "odd.af"
    odd.write_text(json.dumps("just a note"))
    with pytest.raises(InvalidInputError, match="is a JSON string, not a Letta agent file"):
        _import(service, "letta", str(odd))

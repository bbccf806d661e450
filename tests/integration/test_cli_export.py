"""`rearview export` and importing it back: a lossless round trip (embedded backend, hashing embedder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rearview.backends.dynamodb import DynamoDBMemoryStore
from rearview.backends.memory import InMemoryMemoryIndex
from rearview.bootstrap import build_service
from rearview.cli import main
from rearview.config.settings import Settings
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import ForgetRequest, MemoryStatus, UpdateRequest, WriteRequest
from rearview.ports import StoreWrite
from rearview.service.lifecycle.archival import archived_event, archived_stub
from rearview.service.memory_service import MemoryService
from rearview.service.portability import Restorer, export_tenant
from rearview.shared.clock import SystemClock

pytest_plugins = ["tests.fixtures.aws"]  # moto fixtures (dynamodb_client, dynamodb_table)


@pytest.fixture(autouse=True)
def _hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")


def _every_status(data: Path) -> None:
    """Two tenants; memories active, merged, updated, superseded, soft-deleted and archived (a stub)."""
    service = build_service(Settings(data_dir=data))
    first = service.write(
        "alice",
        WriteRequest(content="The user prefers dark roast coffee", tags=["pref"], cues=["café préféré"]),
    )
    service.write(  # merged, its cue joins the first one's
        "alice",
        WriteRequest(content="the user prefers dark roast coffee.", cues=["Lieblingsgetränk"]),
    )
    service.update("alice", UpdateRequest(memory_id=first.memory.id, importance=5, metadata={"k": 1.5}))
    old = service.write("alice", WriteRequest(content="Deploys run on Fridays", type="procedural"))
    service.write("alice", WriteRequest(content="Deploys run on Mondays", supersedes=old.memory.id))
    gone = service.write("alice", WriteRequest(content="A passing thought", ttl_days=30))
    service.forget("alice", ForgetRequest(ids=[gone.memory.id]))
    cold = service.store.get(
        "alice", service.write("alice", WriteRequest(content="Old trip to Lisbon")).memory.id
    )
    assert cold is not None
    now = datetime(2026, 1, 2, tzinfo=UTC)
    stub = archived_stub(cold, "archive-ref-1")
    service.store.commit([StoreWrite(stub, archived_event(cold, "archive-ref-1", "test", now), cold.version)])
    service.write("bob", WriteRequest(content="Bob writes Rust", visibility="private", agent_id="b1"))


def test_export_import_export_is_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    _every_status(source)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"

    assert main(["export", "--all-tenants", "--output", str(first), "--data-dir", str(source)]) == 0
    assert "exported 6 memories of 2 tenants" in capsys.readouterr().err
    records = [json.loads(line) for line in first.read_text().splitlines()]
    assert {r["memory"]["status"] for r in records} == {s.value for s in MemoryStatus}
    assert all(r["format"] == "rearview-export/1" and r["history"] for r in records)
    assert max(len(r["history"]) for r in records) == 3  # created, merged, updated
    cued = [r["memory"]["cues"] for r in records if r["memory"]["cues"]]
    assert cued == [
        [{"text": "café préféré", "by": "default"}, {"text": "Lieblingsgetränk", "by": "default"}]
    ]

    assert main(["import", str(first), "--data-dir", str(target)]) == 0
    assert "imported into tenant 'alice': restored 5; tenant 'bob': restored 1\n" in capsys.readouterr().out
    assert main(["export", "--all-tenants", "-o", str(second), "--data-dir", str(target)]) == 0
    assert second.read_bytes() == first.read_bytes()

    # restored memories are searchable: the import indexed them
    assert main(["search", "coffee", "--tenant", "alice", "--data-dir", str(target)]) == 0
    assert "dark roast coffee" in capsys.readouterr().out
    assert main(["search", "Lieblingsgetränk", "--tenant", "alice", "--data-dir", str(target)]) == 0
    assert "dark roast coffee" in capsys.readouterr().out  # found by its cue: restored with the cues indexed

    # importing the same export again adds nothing, says so, and succeeds (issue 34.5)
    assert main(["import", "--continue-on-error", str(first), "--data-dir", str(target)]) == 0
    out, err = capsys.readouterr()
    assert "already present" in out and "skipped" not in out + err


def test_export_one_tenant_to_stdout_and_import_it_into_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    _every_status(source)
    capsys.readouterr()
    assert main(["export", "--tenant", "bob", "--data-dir", str(source)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["memory"]["tenant_id"] == "bob"

    moved = tmp_path / "bob.jsonl"
    moved.write_text(lines[0] + "\n")
    assert main(["import", str(moved), "--tenant", "carol", "--data-dir", str(target)]) == 0
    assert "imported into tenant 'carol': restored 1\n" in capsys.readouterr().out
    restored = build_service(Settings(data_dir=target)).store.list_memories("carol", _all()).items
    assert [m.content for m in restored] == ["Bob writes Rust"]
    history = build_service(Settings(data_dir=target)).store.history("carol", restored[0].id)
    assert [e.tenant_id for e in history] == ["carol"]


def _all() -> object:
    from rearview.service.portability import EVERY_STATUS

    return EVERY_STATUS


def test_an_unknown_export_format_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "future.jsonl"
    src.write_text(json.dumps({"format": "rearview-export/2", "memory": {}, "history": []}) + "\n")
    assert main(["import", str(src), "--data-dir", str(tmp_path / "data")]) == 1
    assert (
        "future.jsonl:1: skipped: invalid `format`: Input should be 'rearview-export/1'"
        in capsys.readouterr().err
    )


def test_export_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    data = tmp_path / "data"
    src = tmp_path / "many.jsonl"
    src.write_text(
        "".join(json.dumps({"content": f"fact number {i} " + "x" * 400}) + "\n" for i in range(400))
    )
    assert main(["import", "--no-merge", str(src), "--data-dir", str(data)]) == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    export = subprocess.Popen(
        [sys.executable, "-m", "rearview.cli", "export", "--data-dir", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert export.stdout is not None and export.stderr is not None
    assert export.stdout.readline().startswith(b'{"format":"rearview-export/1"')
    export.stdout.close()  # what `head -1` does: the reader leaves while 200 kB are still to come
    assert export.wait(timeout=60) == 1
    assert export.stderr.read() == b""  # no traceback, no "Exception ignored" at exit


def test_an_export_of_the_local_store_restores_exactly_into_dynamodb(
    tmp_path: Path, dynamodb_client: Any, dynamodb_table: str
) -> None:
    _every_status(tmp_path / "local")
    local = build_service(Settings(data_dir=tmp_path / "local")).store
    clock = SystemClock()
    aws = MemoryService(
        DynamoDBMemoryStore(dynamodb_table, dynamodb_client, clock=clock),
        InMemoryMemoryIndex(256),
        HashingEmbedder(256),
        clock,
    )
    restorer = Restorer(aws)
    for tenant in ("alice", "bob"):
        for record in export_tenant(local, tenant):
            restorer.restore(record)
    restorer.flush()
    for tenant in ("alice", "bob"):
        assert list(export_tenant(aws.store, tenant)) == list(export_tenant(local, tenant))
    assert sorted(aws.store.tenants()) == ["alice", "bob"]

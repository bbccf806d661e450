"""The Archive contract: every archive adapter must pass these unchanged.

An adapter joins by adding a factory to `ARCHIVES` (the S3 one runs on moto, its bucket built
from template.yaml's `ArchiveBucket` by `tests/fixtures/aws.py`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rearview.backends.local_archive import DirectoryArchive
from rearview.backends.memory import InMemoryArchive
from rearview.errors import NotFoundError
from rearview.models import HistoryAction, HistoryEvent, Memory, MemoryStatus
from rearview.ports import Archive
from rearview.shared.clock import ManualClock
from rearview.shared.ids import new_id
from tests.factories import T0, make_memory, minutes

pytest_plugins = ["tests.fixtures.aws"]  # moto fixtures for the S3 archive


def _memory_archive(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Archive:
    return InMemoryArchive()


def _directory_archive(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Archive:
    return DirectoryArchive(tmp_path / "archive", clock=clock)


def _s3_archive(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Archive:
    pytest.importorskip("moto")
    from rearview.backends.s3_archive import S3Archive

    bucket: str = request.getfixturevalue("s3_bucket")
    client: Any = request.getfixturevalue("s3_client")
    return S3Archive(bucket, client=client, clock=clock)


ARCHIVES: dict[str, Callable[[pytest.FixtureRequest, Path, ManualClock], Archive]] = {
    "memory": _memory_archive,
    "directory": _directory_archive,
    "s3": _s3_archive,
}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture(params=sorted(ARCHIVES))
def archive(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Archive:
    return ARCHIVES[request.param](request, tmp_path, clock)


def archived(content: str, tenant_id: str = "t1") -> tuple[Memory, list[HistoryEvent]]:
    memory = make_memory(content, tenant_id=tenant_id, tags=["a"]).model_copy(
        update={"metadata": {"k": "v", "n": 2}, "strength": 0.37, "entities": ["Ada"]}
    )
    history = [
        HistoryEvent(
            id=new_id(T0 + minutes(i)),
            tenant_id=tenant_id,
            memory_id=memory.id,
            action=action,
            at=T0 + minutes(i),
            before=None if i == 0 else {"content": "before"},
            after={"content": content},
            note=f"event {i}",
        )
        for i, action in enumerate((HistoryAction.CREATED, HistoryAction.UPDATED))
    ]
    return memory, history


def test_put_then_get_round_trips_memory_and_history(archive: Archive) -> None:
    a, b = archived("first"), archived("second")
    ref = archive.put("t1", [a, b])
    assert archive.get("t1", ref, a[0].id) == a
    assert archive.get("t1", ref, b[0].id) == b
    assert list(archive.iter_refs("t1")) == [ref]


def test_each_put_is_its_own_object(archive: Archive) -> None:
    refs = {archive.put("t1", [archived(f"m{i}")]) for i in range(3)}
    assert len(refs) == 3 and set(archive.iter_refs("t1")) == refs


def test_unknown_memory_or_reference_is_not_found(archive: Archive) -> None:
    memory, history = archived("kept")
    ref = archive.put("t1", [(memory, history)])
    with pytest.raises(NotFoundError):
        archive.get("t1", ref, "01UNKNOWN")
    with pytest.raises(NotFoundError):
        archive.get("t1", ref.replace(ref.rsplit("/", 1)[-1], "missing.jsonl.gz"), memory.id)


def test_tenants_are_isolated(archive: Archive) -> None:
    memory, history = archived("private to t1")
    ref = archive.put("t1", [(memory, history)])
    with pytest.raises(NotFoundError):
        archive.get("t2", ref, memory.id)
    archive.delete("t2", ref, memory.id)  # another tenant's delete changes nothing
    assert archive.get("t1", ref, memory.id) == (memory, history)
    assert list(archive.iter_refs("t2")) == []


def test_delete_removes_one_memory_and_then_the_object(archive: Archive) -> None:
    a, b = archived("a"), archived("b")
    ref = archive.put("t1", [a, b])
    archive.delete("t1", ref, a[0].id)
    archive.delete("t1", ref, a[0].id)  # idempotent
    with pytest.raises(NotFoundError):
        archive.get("t1", ref, a[0].id)
    assert archive.get("t1", ref, b[0].id) == b
    archive.delete("t1", ref, b[0].id)
    assert list(archive.iter_refs("t1")) == []
    archive.delete("t1", ref, b[0].id)  # an object that is gone: still fine


def test_what_goes_in_comes_out_whatever_the_status(archive: Archive) -> None:
    memory, _ = archived("superseded once")
    memory = memory.model_copy(update={"status": MemoryStatus.SUPERSEDED, "superseded_by": "01NEXT"})
    ref = archive.put("t1", [(memory, [])])
    assert archive.get("t1", ref, memory.id) == (memory, [])


# ---------------------------------------------------------------- the directory's own format


def test_directory_archive_uses_the_s3_layout_and_format(tmp_path: Path, clock: ManualClock) -> None:
    archive = DirectoryArchive(tmp_path, clock=clock)
    memory, history = archived("layout check", tenant_id="team/a")
    ref = archive.put("team/a", [(memory, history)])
    assert ref.startswith("tenant=team%2Fa/date=2026-01-01/") and ref.endswith(".jsonl.gz")
    lines = gzip.decompress((tmp_path / ref).read_bytes()).decode().splitlines()
    record = json.loads(lines[0])
    assert record["v"] == 1 and record["memory"]["id"] == memory.id and len(record["history"]) == 2
    assert not list(tmp_path.rglob(".tmp-*"))  # written atomically, nothing left behind
    with pytest.raises(NotFoundError):
        archive.get("team/a", "tenant=team%2Fa/../../etc/passwd", memory.id)

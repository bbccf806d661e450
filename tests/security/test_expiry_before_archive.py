"""Expiry never leaves an unreachable copy (issue 32.7).

A memory whose lifetime ends while the lifecycle timer is off (or the server is down longer than
the look-ahead) used to vanish from every tool while its text stayed in both SQLite files:
neither archived nor erasable. The archive job now sweeps what expired: an expired memory is
archived (restorable, hard-forgettable) and an expired soft-forgotten one is erased, text included.
Run on the embedded stack (SQLite store and index, a directory archive) under a manual clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from rearview.backends.local_archive import DirectoryArchive
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import NotFoundError
from rearview.models import ForgetRequest, MemoryStatus, SearchRequest, WriteRequest
from rearview.service.lifecycle import LifecycleService
from rearview.service.lifecycle.context import LifecycleConfig
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.factories import T0

SECRET = "zanzibar-7741 is the door code of the east server room"


@dataclass
class Stack:
    service: MemoryService
    jobs: LifecycleService
    clock: ManualClock
    root: Path

    def files_holding(self, text: str) -> list[str]:
        needle = text.encode()
        return [p.name for p in self.root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    clock = ManualClock(T0)
    store = SQLiteMemoryStore(tmp_path / "memories.sqlite3", clock=clock)
    index = SQLiteMemoryIndex(tmp_path / "index.sqlite3", dimension=64)
    store.ensure_schema()
    index.ensure_schema()
    archive = DirectoryArchive(tmp_path / "archive", clock=clock)
    service = MemoryService(store, index, HashingEmbedder(64), clock, archive=archive)
    jobs = LifecycleService(service, InMemoryCheckpointStore(), LifecycleConfig(lookahead=timedelta(days=1)))
    yield Stack(service, jobs, clock, tmp_path)


def test_a_memory_that_expired_while_no_job_ran_is_archived_and_reachable(stack: Stack) -> None:
    memory_id = stack.service.write("t1", WriteRequest(content=SECRET, ttl_days=2)).memory.id
    stack.clock.advance(days=10)  # the timer was off: well past the lifetime and the look-ahead
    with pytest.raises(NotFoundError):
        stack.service.get("t1", memory_id)

    report = stack.jobs.apply_retention("t1")
    assert report.expired_archived == 1
    assert stack.service.get("t1", memory_id).status is MemoryStatus.ARCHIVED
    assert stack.service.restore("t1", memory_id).memory.content == SECRET
    hits = stack.service.search("t1", SearchRequest(query="east server room door code", reinforce=False))
    assert [h.id for h in hits.results] == [memory_id]

    stack.service.forget("t1", ForgetRequest(ids=[memory_id], hard=True))
    assert stack.files_holding("zanzibar-7741") == []


def test_an_expired_soft_forgotten_memory_is_erased_text_included(stack: Stack) -> None:
    memory_id = stack.service.write("t1", WriteRequest(content=SECRET, ttl_days=2)).memory.id
    stack.service.forget("t1", ForgetRequest(ids=[memory_id]))
    stack.clock.advance(days=10)

    report = stack.jobs.apply_retention("t1")
    assert (report.expired_archived, report.expired_erased) == (0, 1)
    assert stack.service.store.get("t1", memory_id) is None
    assert stack.service.store.list_expired("t1") == []
    assert stack.files_holding("zanzibar-7741") == []


def test_a_second_run_finds_nothing_left(stack: Stack) -> None:
    for i in range(3):
        stack.service.write("t1", WriteRequest(content=f"{SECRET} ({i})", ttl_days=1))
    stack.clock.advance(days=5)
    assert stack.jobs.apply_retention("t1").expired_archived == 3
    again = stack.jobs.apply_retention("t1")
    assert (again.expired_archived, again.expired_erased) == (0, 0)

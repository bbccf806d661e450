"""One tenant's concurrent `ingest` calls are bounded; the next is `busy`, other tenants are untouched."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import BusyError
from rearview.models import IngestMessage, IngestRequest
from rearview.ports import Vector
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.tenant_slots import TenantSlots
from rearview.shared.clock import SystemClock


class GatedEmbedder(HashingEmbedder):
    """Document calls block until `release` is set; `entered` counts the calls that are inside."""

    def __init__(self) -> None:
        super().__init__(64)
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        self.entered.release()
        assert self.release.wait(10)
        return super().embed_documents(texts)


def _request(n: int) -> IngestRequest:
    return IngestRequest(
        messages=[IngestMessage(content=f"note {n} number {i}", speaker="Ana") for i in range(3)],
        session_id=f"s{n}",
    )


def test_a_tenant_past_its_bound_is_refused_while_another_tenant_ingests() -> None:
    embedder = GatedEmbedder()
    clock = SystemClock()
    service = MemoryService(
        InMemoryMemoryStore(clock), InMemoryMemoryIndex(64), embedder, clock,
        ServiceConfig(tenant_ingest_concurrency=2),
    )  # fmt: skip
    results: list[object] = []
    running = [
        threading.Thread(target=lambda n=n: results.append(service.ingest("a", _request(n))))
        for n in range(2)
    ]
    for thread in running:
        thread.start()
    for _ in running:
        assert embedder.entered.acquire(timeout=10)  # both of tenant a's ingests are inside
    with pytest.raises(BusyError, match="already has 2 memory_ingest call"):
        service.ingest("a", _request(9))
    other = threading.Thread(target=lambda: results.append(service.ingest("b", _request(5))))
    other.start()
    assert embedder.entered.acquire(timeout=10)  # tenant b is not refused
    embedder.release.set()
    for thread in [*running, other]:
        thread.join(10)
    assert len(results) == 3
    assert service.ingest("a", _request(7)).created  # slots are given back


def test_slots_are_given_back_when_the_call_fails() -> None:
    slots = TenantSlots("memory_ingest", 1)
    with pytest.raises(RuntimeError), slots.slot("a"):
        raise RuntimeError("boom")
    assert slots.running("a") == 0
    with slots.slot("a"), pytest.raises(BusyError), slots.slot("a"):
        pass

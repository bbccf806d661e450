from __future__ import annotations

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.factories import T0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def service(clock: ManualClock) -> MemoryService:
    embedder = HashingEmbedder(256)
    return MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(256), embedder, clock)

"""Verified memories as a freshness signal (issue 47, item 4): decay and recency count from a check."""

from __future__ import annotations

import pytest

from rearview.errors import InvalidInputError
from rearview.models import ForgetRequest, UpdateRequest, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.service.search.factors import rerank_factors
from rearview.shared.clock import ManualClock


def test_a_verified_memory_decays_no_faster_than_its_unverified_twin(
    service: MemoryService, clock: ManualClock
) -> None:
    checked = service.write("t1", WriteRequest(content="The VPN gateway is vpn1.example.com")).memory
    twin = service.write("t1", WriteRequest(content="The build cache lives on cache2.example.com")).memory
    clock.advance(days=20)
    service.update("t1", UpdateRequest(memory_id=checked.id, verified=True))
    policy = service.config.ranking
    stronger_once = False
    for _ in range(6):
        clock.advance(days=10)
        a, b = service.get("t1", checked.id), service.get("t1", twin.id)
        assert a.strength >= b.strength
        stronger_once |= a.strength > b.strength
        stored_a, stored_b = service.store.get("t1", checked.id), service.store.get("t1", twin.id)
        assert stored_a is not None and stored_b is not None
        recency_a = rerank_factors(stored_a, clock.now(), policy).recency
        recency_b = rerank_factors(stored_b, clock.now(), policy).recency
        assert recency_a > recency_b
    assert stronger_once


def test_verified_false_and_a_verification_of_a_forgotten_memory_name_the_field(
    service: MemoryService,
) -> None:
    memory = service.write("t1", WriteRequest(content="Standups move to 10:00 in January")).memory
    with pytest.raises(InvalidInputError) as false:
        service.update("t1", UpdateRequest(memory_id=memory.id, verified=False))
    assert false.value.field == "verified"
    service.forget("t1", ForgetRequest(ids=[memory.id]))
    with pytest.raises(InvalidInputError) as forgotten:
        service.update("t1", UpdateRequest(memory_id=memory.id, verified=True))
    assert forgotten.value.field == "verified" and "deleted" in forgotten.value.problem

"""A heavy tenant's call steps aside at yield points while a lighter tenant's runs (issue 33.3).

Python runs one thread at a time: beside tenant A's back-to-back searches (each all Python once its
query embedding is cached), tenant B's search got about half of the interpreter and its p95 rose
3.3-4x. Now `Courtesy` makes a call of the tenant asking more (its calls in the lanes, running or
waiting) wait at `yield_point()` while a lighter tenant's call runs, up to `max_pause_s`. The order of
events is read from the calls themselves; the only time bound is the pause's upper limit.
"""

from __future__ import annotations

import threading
import time

import anyio

from rearview.api.fair_share import Courtesy, FairLane
from rearview.models import SearchRequest, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.yield_points import run_with_hook, yield_point

WAIT_S = 10.0


def test_a_yield_point_outside_a_lane_does_nothing() -> None:
    yield_point()  # no hook on this thread: returns at once, raises nothing


def test_the_hook_is_the_calls_own_and_is_restored() -> None:
    calls: list[str] = []

    def outer_call() -> None:
        yield_point()
        run_with_hook(lambda: calls.append("inner"), yield_point)  # a nested call has its own hook
        yield_point()

    run_with_hook(lambda: calls.append("outer"), outer_call)
    assert calls == ["outer", "inner", "outer"]
    yield_point()
    assert calls == ["outer", "inner", "outer"]


def _running(courtesy: Courtesy, tenant: str, release: threading.Event) -> threading.Thread:
    """A call of `tenant` running in a thread of its own until `release` is set."""
    started = threading.Event()

    def call() -> None:
        started.set()
        assert release.wait(WAIT_S)

    thread = threading.Thread(target=courtesy.run, args=(tenant, call))
    thread.start()
    assert started.wait(WAIT_S)
    return thread


def test_the_heavier_tenant_waits_for_the_lighter_ones_call() -> None:
    courtesy = Courtesy(max_pause_s=WAIT_S)
    for tenant, calls in (("heavy", 8), ("light", 1)):
        for _ in range(calls):
            courtesy.enter(tenant)
    release, order = threading.Event(), []
    light = _running(courtesy, "light", release)
    waiter = threading.Thread(target=lambda: (courtesy.step_aside("heavy"), order.append("heavy resumed")))
    waiter.start()
    waiter.join(0.1)
    assert waiter.is_alive()  # still stepping aside
    order.append("light returned")
    release.set()
    light.join(WAIT_S)
    waiter.join(WAIT_S)
    assert order == ["light returned", "heavy resumed"]


def test_the_lighter_tenant_and_equals_never_wait() -> None:
    courtesy = Courtesy(max_pause_s=WAIT_S)
    for tenant, calls in (("heavy", 8), ("light", 1), ("peer", 8)):
        for _ in range(calls):
            courtesy.enter(tenant)
    release = threading.Event()
    heavy = _running(courtesy, "heavy", release)
    began = time.monotonic()
    courtesy.step_aside("light")  # the heavy tenant's running call does not hold it
    courtesy.step_aside("peer")  # nor an equal's
    assert time.monotonic() - began < WAIT_S / 2
    release.set()
    heavy.join(WAIT_S)


def test_a_pause_is_bounded() -> None:
    courtesy = Courtesy(max_pause_s=0.05)
    courtesy.enter("heavy")
    courtesy.enter("heavy")
    courtesy.enter("light")
    release = threading.Event()
    light = _running(courtesy, "light", release)
    courtesy.step_aside("heavy")  # returns after max_pause_s although the light call still runs
    assert light.is_alive()
    release.set()
    light.join(WAIT_S)


async def test_lanes_count_demand_across_lanes_and_step_aside_in_their_threads() -> None:
    """A's second call (A asks 2, B 1) waits at its first yield point until B's call has returned."""
    courtesy = Courtesy(max_pause_s=WAIT_S)
    search = FairLane("memory_search", 3, 2, courtesy=courtesy)
    writes = FairLane("write", 3, 2, courtesy=courtesy)
    events: list[str] = []
    b_started, b_release, a_hold = threading.Event(), threading.Event(), threading.Event()

    def b_call() -> None:
        b_started.set()
        assert b_release.wait(WAIT_S)
        events.append("B returned")

    def a_held() -> None:
        assert a_hold.wait(WAIT_S)

    def a_search() -> None:
        yield_point()
        events.append("A passed its yield point")

    async with anyio.create_task_group() as group:
        group.start_soon(writes.run, "a", a_held)  # A's demand: this one and its search
        group.start_soon(writes.run, "b", b_call)
        with anyio.fail_after(WAIT_S):
            while not b_started.is_set():
                await anyio.sleep(0.005)
        assert courtesy.demand == {"a": 1, "b": 1}
        group.start_soon(search.run, "a", a_search)
        with anyio.fail_after(WAIT_S):
            while courtesy.demand["a"] < 2:
                await anyio.sleep(0.005)
        await anyio.sleep(0.05)
        assert events == []  # A's search is stepping aside
        b_release.set()
        a_hold.set()
    assert events == ["B returned", "A passed its yield point"]
    assert courtesy.demand == {}


def test_a_search_passes_yield_points_between_its_stages(service: MemoryService) -> None:
    """After the embedding, every 25 candidates read and ranked, around the second hop: each may step aside."""
    for i in range(60):
        service.write(
            "t", WriteRequest(content=f"Alice moved the staging server backup number {i} to Lisbon")
        )
    points: list[int] = []
    found = run_with_hook(
        lambda: points.append(1), lambda: service.search("t", SearchRequest(query="where is the backup?"))
    )
    assert found.results
    assert len(points) >= 6

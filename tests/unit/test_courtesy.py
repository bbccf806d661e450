"""A heavy tenant's call steps aside at yield points while a lighter tenant's request is served (33.3).

Python runs one thread at a time: beside tenant A's back-to-back searches (each all Python once its
query embedding is cached), tenant B's search got about half of the interpreter and its p95 rose
3.3-4x. Now `Courtesy` makes a call of the tenant asking more (its requests in flight) wait at
`yield_point()` while a lighter tenant's request is active (served, on the loop or in a thread, not
waiting for a lane), up to `max_pause_s`. The order of events is read from the calls themselves; the
only time bound is the pause's upper limit.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

import anyio
import pytest
from pydantic import ValidationError
from starlette.types import Message, Receive, Scope, Send

from rearview.api.auth import TENANT_STATE_KEY
from rearview.api.courtesy import (
    GIL_SWITCH_INTERVAL_MS,
    Courtesy,
    CourtesyScope,
    Visit,
    share_the_interpreter,
)
from rearview.api.fair_share import FairLane
from rearview.config.settings import Settings
from rearview.models import SearchRequest, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.shared.yield_points import run_with_hook, yield_point
from tests.unit.test_protocol_letter import MODERN, rpc, serving

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


def _visits(courtesy: Courtesy, **demand: int) -> dict[str, list[Visit]]:
    """Each tenant's visits (active requests) in `courtesy`, `demand[tenant]` of them."""
    return {tenant: [courtesy.arrive(tenant) for _ in range(n)] for tenant, n in demand.items()}


def _stepping_aside(courtesy: Courtesy, tenant: str, order: list[str]) -> threading.Thread:
    """A call of `tenant` at a yield point in a thread of its own, noting in `order` when it resumes."""
    thread = threading.Thread(target=lambda: (courtesy.step_aside(tenant), order.append(f"{tenant} resumed")))
    thread.start()
    return thread


def test_the_heavier_tenant_waits_until_the_lighter_ones_request_leaves() -> None:
    courtesy = Courtesy(max_pause_s=WAIT_S)
    visits = _visits(courtesy, heavy=8, light=1)
    order: list[str] = []
    waiter = _stepping_aside(courtesy, "heavy", order)
    waiter.join(0.1)
    assert waiter.is_alive()  # still stepping aside
    order.append("light left")
    visits["light"][0].leave()
    waiter.join(WAIT_S)
    assert order == ["light left", "heavy resumed"]
    assert courtesy.demand == {"heavy": 8}


def test_the_lighter_tenant_and_equals_never_wait() -> None:
    courtesy = Courtesy(max_pause_s=WAIT_S)
    visits = _visits(courtesy, heavy=8, light=1, peer=8)
    began = time.monotonic()
    courtesy.step_aside("light")  # the heavy tenant's active requests do not hold it
    visits["light"][0].leave()
    courtesy.step_aside("peer")  # nor an equal's
    assert time.monotonic() - began < WAIT_S / 2


def test_a_request_waiting_for_a_lane_holds_nobody() -> None:
    """The light request may wait for the very slot the heavy call holds: the heavy call goes on."""
    courtesy = Courtesy(max_pause_s=WAIT_S)
    visits = _visits(courtesy, heavy=2, light=1)
    order: list[str] = []
    with courtesy.waiting("light"):
        _stepping_aside(courtesy, "heavy", order).join(WAIT_S)
    assert order == ["heavy resumed"]
    waiter = _stepping_aside(courtesy, "heavy", order)  # active again: the heavy call steps aside
    waiter.join(0.1)
    assert waiter.is_alive()
    visits["light"][0].leave()
    waiter.join(WAIT_S)
    assert order == ["heavy resumed", "heavy resumed"]


def test_a_pause_is_bounded() -> None:
    courtesy = Courtesy(max_pause_s=0.05)
    _visits(courtesy, heavy=2, light=1)
    courtesy.step_aside("heavy")  # returns after max_pause_s although the light request is still served
    assert courtesy.demand == {"heavy": 2, "light": 1}


def test_leaving_twice_counts_once() -> None:
    courtesy = Courtesy()
    visit = courtesy.arrive("a")
    courtesy.arrive("a")
    visit.leave()
    visit.leave()
    assert courtesy.demand == {"a": 1}


async def test_lanes_count_demand_across_lanes_and_step_aside_in_their_threads() -> None:
    """Outside a request a lane call is a visit of its own: A's second call (A asks 2, B 1) waits at
    its first yield point until B's call has returned."""
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


async def test_a_request_is_one_visit_from_its_body_to_its_response_start() -> None:
    """`CourtesyScope`: the lane call a request makes in a child task (as the SDK does) is the request's visit."""
    courtesy = Courtesy()
    lane = FairLane("write", 2, 1, courtesy=courtesy)
    seen: list[tuple[str, dict[str, int]]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        async def handler() -> None:
            await lane.run("t1", lambda: seen.append(("in the lane", dict(courtesy.demand))))

        async with anyio.create_task_group() as group:
            group.start_soon(handler)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        seen.append(("response started", dict(courtesy.demand)))
        await send({"type": "http.response.body", "body": b"{}"})

    scope = {"type": "http", "method": "POST", "path": "/mcp", "state": {TENANT_STATE_KEY: "t1"}}
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    await CourtesyScope(app, courtesy, "/mcp")(scope, _no_body, send)
    assert seen == [("in the lane", {"t1": 1}), ("response started", {})]
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    other = {**scope, "path": "/healthz"}
    await CourtesyScope(app, courtesy, "/mcp")(other, _no_body, send)  # not /mcp: the lane's own visit
    assert seen[-2:] == [("in the lane", {"t1": 1}), ("response started", {})]
    assert courtesy.demand == {}


async def test_a_tool_call_through_the_app_arrives_once(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real MCP SDK: the request's visit reaches its lane call, which counts no second one."""
    arrivals: list[str] = []
    arrive = Courtesy.arrive

    def counted(self: Courtesy, tenant_id: str) -> Visit:
        arrivals.append(tenant_id)
        return arrive(self, tenant_id)

    monkeypatch.setattr(Courtesy, "arrive", counted)
    async with serving(service) as http:
        reply = await rpc(http, MODERN, "tools/call", {"name": "memory_stats", "arguments": {}})
    assert "result" in reply, reply
    assert arrivals == ["t1"]


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def test_on_the_loop_a_heavier_request_gives_way_until_the_lighter_one_leaves() -> None:
    """`give_way`: the loop's step aside (before a request's work, after its lane call), never blocking it."""
    courtesy = Courtesy(max_pause_s=WAIT_S)
    visits = _visits(courtesy, heavy=2, light=1)
    order: list[str] = []

    async def heavy() -> None:
        await courtesy.give_way("heavy")
        order.append("heavy went on")

    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(heavy)
            await courtesy.give_way("light")  # the lighter never waits, and the loop is not blocked
            await anyio.sleep(0.05)
            assert order == []
            order.append("light left")
            visits["light"][0].leave()
    assert order == ["light left", "heavy went on"]
    bounded = Courtesy(max_pause_s=0.01)
    _visits(bounded, heavy=2, light=1)
    with anyio.fail_after(WAIT_S):
        await bounded.give_way("heavy")  # the light request stays: the wait ends at max_pause_s


def test_serve_hands_the_interpreter_on_at_the_configured_interval() -> None:
    """One default: the settings' (`rearview serve`) is the module's; Python's own 5 ms is replaced."""
    assert Settings().gil_switch_interval_ms == GIL_SWITCH_INTERVAL_MS
    before = sys.getswitchinterval()
    try:
        share_the_interpreter(Settings(gil_switch_interval_ms=2).gil_switch_interval_ms)
        assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        sys.setswitchinterval(before)
    with pytest.raises(ValidationError, match="gil_switch_interval_ms"):
        Settings(gil_switch_interval_ms=0)


async def test_a_call_waiting_for_its_lane_turn_pauses_nobody() -> None:
    """The light call waits for the slot the heavy call holds: the heavy call must not wait for it."""
    courtesy = Courtesy(max_pause_s=WAIT_S)
    lane = FairLane("write", 1, 1, courtesy=courtesy)
    courtesy.arrive("heavy")  # another request of the heavy tenant in flight: it asks more than light
    light_queued = threading.Event()
    order: list[object] = []

    def heavy_call() -> None:
        assert light_queued.wait(WAIT_S)
        began = time.monotonic()
        yield_point()
        order.append(("heavy passed its yield point at once", time.monotonic() - began < WAIT_S / 2))

    async def until(condition: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT_S):
            while not condition():
                await anyio.sleep(0.005)

    async with anyio.create_task_group() as group:
        group.start_soon(lane.run, "heavy", heavy_call)
        await until(lambda: lane.running("heavy") == 1)
        group.start_soon(lane.run, "light", lambda: order.append("light ran"))
        await until(lambda: lane.waiting("light") == 1)
        light_queued.set()
    assert order == [("heavy passed its yield point at once", True), "light ran"]


async def test_a_request_cancelled_while_giving_way_leaves() -> None:
    """A heavier request whose client is gone while it waits its turn counts no more (nor pauses anyone)."""
    courtesy = Courtesy(max_pause_s=WAIT_S)
    light = courtesy.arrive("light")
    courtesy.arrive("heavy")  # so the request below asks more than light

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("the cancelled request must not reach the app")

    scope = {"type": "http", "method": "POST", "path": "/mcp", "state": {TENANT_STATE_KEY: "heavy"}}
    with anyio.move_on_after(0.1):
        await CourtesyScope(app, courtesy, "/mcp")(scope, _no_body, _no_send)
    assert courtesy.demand == {"light": 1, "heavy": 1}
    light.leave()


async def _no_send(message: Message) -> None:
    raise AssertionError(f"nothing is sent: {message}")

"""Tool calls run in lanes with a share per tenant (issue 33.3): one tenant's load never takes them all.

Before, writes and every other tool but search ran in anyio's one shared pool of 40 threads: tenant
A's 8 concurrent maximum-size writes made one of tenant B's writes take 52 s. Now (`FairLane`) a
tenant runs at most its share of a lane, its other calls wait on the event loop (no thread), are
admitted tenant by tenant, and past `max_waiting` are refused `busy`. Calls are held on events, so
what runs is read from the calls themselves, never from timings.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from rearview.api.app import build_mcp
from rearview.api.fair_share import FairLane, Fairness
from rearview.errors import BusyError
from rearview.models import WriteRequest
from rearview.service.memory_service import MemoryService
from tests.tool_context import tool_context

WAIT_S = 10.0


class Held:
    """Blocking calls that record the order they start in and wait until released one by one."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.gates: dict[str, threading.Event] = {}

    def call(self, name: str) -> Any:
        self.gates[name] = threading.Event()

        def run() -> str:
            self.started.append(name)
            assert self.gates[name].wait(WAIT_S), f"{name} was never released"
            return name

        return run

    async def until(self, count: int) -> None:
        with anyio.fail_after(WAIT_S):
            while len(self.started) < count:
                await anyio.sleep(0.005)

    async def settle(self) -> None:
        """Give waiting calls every chance to (wrongly) start."""
        await anyio.sleep(0.05)


async def test_a_tenant_runs_its_share_and_another_tenant_starts_at_once() -> None:
    lane, held = FairLane("write", width=3, per_tenant=2), Held()
    async with anyio.create_task_group() as tasks:
        for i in range(5):
            tasks.start_soon(lane.run, "a", held.call(f"a{i}"))
        await held.until(2)
        await held.settle()
        assert sorted(held.started) == ["a0", "a1"] and lane.waiting("a") == 3  # two threads: either first
        tasks.start_soon(lane.run, "b", held.call("b0"))
        await held.until(3)  # b found the thread a could not take
        for gate in held.gates.values():
            gate.set()
    assert sorted(held.started) == ["a0", "a1", "a2", "a3", "a4", "b0"]


async def test_waiting_calls_are_admitted_tenant_by_tenant() -> None:
    lane, held = FairLane("write", width=1, per_tenant=1), Held()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lane.run, "a", held.call("a0"))
        await held.until(1)
        for name in ("a1", "a2", "a3"):
            tasks.start_soon(lane.run, "a", held.call(name))
        await held.settle()
        tasks.start_soon(lane.run, "b", held.call("b0"))  # last to come, second to run
        await held.settle()
        for n in range(2, 6):
            held.gates[held.started[-1]].set()
            await held.until(n)
        held.gates[held.started[-1]].set()
    assert held.started == ["a0", "a1", "b0", "a2", "a3"]


async def test_a_tenant_with_too_many_waiting_is_busy_and_others_are_not() -> None:
    lane, held = FairLane("write", width=2, per_tenant=1, max_waiting=2), Held()
    async with anyio.create_task_group() as tasks:
        for name in ("a0", "a1", "a2"):
            tasks.start_soon(lane.run, "a", held.call(name))
        await held.until(1)
        await held.settle()
        with pytest.raises(BusyError, match="1 write call\\(s\\) running and 2 waiting"):
            await lane.run("a", held.call("a3"))
        tasks.start_soon(lane.run, "b", held.call("b0"))
        await held.until(2)
        for gate in held.gates.values():
            gate.set()
    assert sorted(held.started) == ["a0", "a1", "a2", "b0"]


async def test_a_cancelled_waiting_call_gives_its_place_up() -> None:
    lane, held = FairLane("write", width=1, per_tenant=1), Held()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lane.run, "a", held.call("a0"))
        await held.until(1)
        with anyio.move_on_after(0.05):
            await lane.run("a", held.call("gone"))
        assert lane.waiting("a") == 0
        tasks.start_soon(lane.run, "a", held.call("a1"))
        await held.settle()
        held.gates["a0"].set()
        await held.until(2)
        held.gates["a1"].set()
    assert held.started == ["a0", "a1"] and lane.running("a") == 0


async def test_a_tenants_writes_past_its_share_wait_while_anothers_write_goes_through(
    service: MemoryService,
) -> None:
    """Through the MCP tools: tenant a's two writes hold its share; b's write is not held back."""
    release, inside = threading.Event(), []
    write = service.write

    def held_write(tenant_id: str, req: WriteRequest) -> Any:
        inside.append(tenant_id)
        if tenant_id == "a":
            assert release.wait(WAIT_S)
        return write(tenant_id, req)

    service.write = held_write  # type: ignore[method-assign]
    mcp = build_mcp(service, fairness=Fairness(write_concurrency=2))

    async def write_as(tenant: str, n: int) -> None:
        await mcp.call_tool("memory_write", {"content": f"note {tenant} {n}"}, tool_context(tenant))

    async with anyio.create_task_group() as tasks:
        for n in range(6):
            tasks.start_soon(write_as, "a", n)
        with anyio.fail_after(WAIT_S):
            while len(inside) < 2:
                await anyio.sleep(0.005)
            await write_as("b", 0)  # returns while a's first two are held and its four wait
        assert inside == ["a", "a", "b"]
        release.set()
    assert inside.count("a") == 6

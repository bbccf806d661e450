"""`memory_search` runs in a lane as wide as `search_concurrency`: more calls queue, other tools never wait.

One tenant runs at most all of the lane but one (issue 33.3): another tenant's search starts at once.

The service's `search` is replaced by one that blocks until released, so what runs at once is read
from the threads themselves, not from timings.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from pydantic import ValidationError

from rearview.api.app import build_mcp
from rearview.api.tools import search_lane
from rearview.config.settings import Settings
from rearview.errors import ConfigurationError
from rearview.models import SearchRequest
from rearview.service.memory_service import MemoryService
from tests.tool_context import tool_context

WAIT_S = 10.0


class _HeldSearches:
    """Stands in for `MemoryService.search`: counts who is inside and holds each call until `release`."""

    def __init__(self, search: Any) -> None:
        self.search = search
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.entered = 0
        self.inside = 0
        self.most_inside = 0

    def __call__(self, tenant_id: str, req: SearchRequest) -> Any:
        with self.lock:
            self.entered += 1
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        try:
            assert self.release.wait(WAIT_S), "the test never released the search"
            return self.search(tenant_id, req)
        finally:
            with self.lock:
                self.inside -= 1

    async def until_entered(self, count: int) -> None:
        with anyio.fail_after(WAIT_S):
            while self.entered < count:
                await anyio.sleep(0.005)


def _served(service: MemoryService, width: int) -> tuple[MCPServer[Any], _HeldSearches]:
    held = _HeldSearches(service.search)
    service.search = held  # type: ignore[method-assign]
    return build_mcp(service, search_concurrency=width), held


async def _search(mcp: MCPServer[Any], tenant: str = "t1") -> None:
    await mcp.call_tool("memory_search", {"query": "tea"}, tool_context(tenant))


async def test_searches_beyond_the_width_queue_and_writes_do_not_wait(service: MemoryService) -> None:
    mcp, held = _served(service, width=1)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_search, mcp)
        await held.until_entered(1)
        tasks.start_soon(_search, mcp)
        # The lane is full: a write still goes through while the first search is held.
        with anyio.fail_after(WAIT_S):
            await mcp.call_tool("memory_write", {"content": "The user drinks green tea"}, tool_context())
        await anyio.sleep(0.05)
        assert held.entered == 1, "the second search started while the lane was full"
        held.release.set()
    assert (held.entered, held.most_inside) == (2, 1)


async def test_searches_up_to_the_width_run_together(service: MemoryService) -> None:
    mcp, held = _served(service, width=3)
    async with anyio.create_task_group() as tasks:
        for tenant in ("t1", "t1", "t2", "t1"):
            tasks.start_soon(_search, mcp, tenant)
        await held.until_entered(3)
        await anyio.sleep(0.05)
        assert held.entered == 3
        held.release.set()
    assert (held.entered, held.most_inside) == (4, 3)


async def test_one_tenant_leaves_a_search_free_for_another(service: MemoryService) -> None:
    mcp, held = _served(service, width=2)
    async with anyio.create_task_group() as tasks:
        for _ in range(5):  # tenant t1 floods the lane: one of its searches runs, the rest wait
            tasks.start_soon(_search, mcp, "t1")
        await held.until_entered(1)
        await anyio.sleep(0.05)
        assert held.entered == 1, "one tenant took the whole lane"
        tasks.start_soon(_search, mcp, "t2")
        await held.until_entered(2)  # t2's search started beside t1's, ahead of t1's waiting four
        held.release.set()
    assert (held.entered, held.most_inside) == (6, 2)


def test_the_default_width_is_the_usable_cpu_count() -> None:
    lane = search_lane()
    assert lane.width == len(os.sched_getaffinity(0))
    assert lane.per_tenant == max(1, lane.width - 1)


def test_a_width_below_one_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="search_concurrency"):
        search_lane(0)
    with pytest.raises(ValidationError, match="search_concurrency"):
        Settings(search_concurrency=0)

"""The tools' shipped schemas (`rearview.api.tools.schemas`): tools/list as if built, each tool built on its first call."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from rearview.api.tools import schemas, strict_tools
from rearview.api.tools.registry import eager_tools
from rearview.api.tools.schemas import SCHEMAS_PATH, LazyTool, generated_schemas
from rearview.service.memory_service import MemoryService
from tests.tool_context import tool_context


@pytest.fixture(autouse=True)
def _read_afresh() -> Any:
    schemas.shipped_schemas.cache_clear()
    yield
    schemas.shipped_schemas.cache_clear()


async def _listing(mcp: MCPServer[Any]) -> str:
    listed = await mcp.list_tools()
    return json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed])


def test_the_shipped_schemas_are_what_the_tools_generate_now(service: MemoryService) -> None:
    shipped = json.loads(SCHEMAS_PATH.read_text(encoding="utf-8"))
    assert shipped == generated_schemas(eager_tools(service)), "run `make tool-schemas`"


async def test_tools_list_is_byte_for_byte_what_the_built_tools_list(service: MemoryService) -> None:
    lazy = strict_tools(service)
    assert all(isinstance(t, LazyTool) and not t.built for t in lazy)
    built = MCPServer("rearview", tools=list(eager_tools(service)))
    assert await _listing(MCPServer("rearview", tools=lazy)) == await _listing(built)


async def test_a_tool_is_built_on_its_first_call_only(service: MemoryService) -> None:
    tools = {t.name: t for t in strict_tools(service)}
    mcp = MCPServer("rearview", tools=list(tools.values()))
    await mcp.list_tools()
    assert not any(isinstance(t, LazyTool) and t.built for t in tools.values())

    await mcp.call_tool("memory_write", {"content": "User prefers tea"}, tool_context())
    await mcp.call_tool("memory_search", {"query": "tea"}, tool_context())

    assert sorted(n for n, t in tools.items() if isinstance(t, LazyTool) and t.built) == [
        "memory_search",
        "memory_write",
    ]


@pytest.mark.parametrize("damage", ["other pydantic", "not JSON", "no tools"])
def test_other_library_versions_or_a_damaged_file_build_the_tools_at_registration(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, damage: str
) -> None:
    shipped = json.loads(SCHEMAS_PATH.read_text(encoding="utf-8"))
    stale = tmp_path / "schemas.json"
    stale.write_text(
        {
            "other pydantic": json.dumps({**shipped, "pydantic": "2.0"}),
            "not JSON": "{",
            "no tools": json.dumps({**shipped, "tools": {}}),
        }[damage],
        encoding="utf-8",
    )
    monkeypatch.setattr(schemas, "SCHEMAS_PATH", stale)

    tools = strict_tools(service)

    assert not any(isinstance(t, LazyTool) for t in tools)
    assert [t.parameters for t in tools] == [t.parameters for t in eager_tools(service)]


async def test_a_stale_shipped_schema_is_logged_on_the_first_call(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    shipped = json.loads(SCHEMAS_PATH.read_text(encoding="utf-8"))
    shipped["tools"]["memory_stats"]["input"]["properties"] = {"renamed": {"type": "string"}}
    stale = tmp_path / "schemas.json"
    stale.write_text(json.dumps(shipped), encoding="utf-8")
    monkeypatch.setattr(schemas, "SCHEMAS_PATH", stale)
    mcp = MCPServer("rearview", tools=strict_tools(service))

    with caplog.at_level(logging.ERROR, logger=schemas.__name__):
        await mcp.call_tool("memory_stats", {}, tool_context())
        await mcp.call_tool("memory_search", {"query": "tea"}, tool_context())

    assert [r.getMessage() for r in caplog.records] == [
        "tool memory_stats: its schemas differ from schemas.json (published by tools/list); "
        "run `make tool-schemas`"
    ]

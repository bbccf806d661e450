"""The official `mcp` client against a running Rearview endpoint: connect and call helpers shared by tiers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

MODES = ["legacy", "2026-07-28"]


@asynccontextmanager
async def connect(url: str, mode: str, key: str | None = None) -> AsyncIterator[Client]:
    """An initialized MCP client session, authenticated with `key` as a bearer API key if given."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured result; fails the test if the tool answered an error."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def call_error(client: Client, tool: str, args: dict[str, Any]) -> str:
    """The tool error's message; fails the test if the tool succeeded."""
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    text = result.content[0].text  # type: ignore[union-attr]
    return str(text)

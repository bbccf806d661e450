"""The official `mcp` client against a running Rearview endpoint: connect and call helpers shared by tiers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Tool

MODES = ["legacy", "2026-07-28"]


@asynccontextmanager
async def connect(url: str, mode: str, key: str | None = None, timeout: float = 30) -> AsyncIterator[Client]:
    """An initialized MCP client session, authenticated with `key` as a bearer API key if given.

    `timeout` bounds each HTTP read and, doubled, each request's wait for its answer: a response
    stream that the client keeps resuming without an answer fails the call instead of hanging it.
    """
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=2 * timeout
        ) as client,
    ):
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured result; fails the test if the tool answered an error."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    return structured


async def call_error(client: Client, tool: str, args: dict[str, Any]) -> str:
    """The tool error's message; fails the test if the tool succeeded."""
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    text = result.content[0].text  # type: ignore[union-attr]
    return str(text)


class BlockingClient:
    """An MCP client session driven from synchronous code (Hypothesis, module-scoped fixtures).

    The session lives in an event loop on a portal thread; each method blocks until the call returns.
    """

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self._portal = portal
        self._client = client

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._portal.call(call, self._client, tool, args)
        return result

    def error(self, tool: str, args: dict[str, Any]) -> str:
        text: str = self._portal.call(call_error, self._client, tool, args)
        return text

    def raw(self, tool: str, args: dict[str, Any]) -> CallToolResult:
        """The tool's answer as is, error or not."""
        result: CallToolResult = self._portal.call(self._client.call_tool, tool, args)
        return result

    def tools(self) -> list[Tool]:
        return self._portal.call(self._client.list_tools).tools

    def prompt(self, name: str, args: dict[str, str]) -> str:
        """The text of a prompt's first message."""
        result = self._portal.call(self._client.get_prompt, name, args)
        return str(result.messages[0].content.text)  # type: ignore[union-attr]

    def read(self, uri: str) -> str:
        """The text of a resource."""
        result = self._portal.call(self._client.read_resource, uri)
        return str(result.contents[0].text)  # type: ignore[union-attr]


@contextmanager
def blocking_client(
    url: str, mode: str, key: str | None = None, timeout: float = 30
) -> Iterator[BlockingClient]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(connect(url, mode, key, timeout)) as client,
    ):
        yield BlockingClient(portal, client)

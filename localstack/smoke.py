#!/usr/bin/env python
"""Smoke-test a deployed Rearview MCP endpoint with the official `mcp` client.

    .venv/bin/python localstack/smoke.py [MCP_URL] [--key KEY]

Defaults: the URL and key `deploy.sh` left in localstack/.rearview/ (or $REARVIEW_MCP_URL and
$REARVIEW_API_KEY). Works against AWS too: pass the stack's McpUrl output and a key.

Checks, in order: no key -> 401 with a `WWW-Authenticate` header naming the protected-resource
metadata; GET -> 405; then, in both protocol eras (2025-11-25 handshake, 2026-07-28 per
request), tools/list, memory_write, memory_search (finds it), memory_get and memory_forget.
Exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
TOOLS = {
    "memory_write", "memory_search", "memory_get", "memory_update", "memory_forget",
    "memory_history", "memory_stats", "memory_summarize",
}  # fmt: skip


def check(condition: bool, message: str) -> None:
    """Print one check; raise SystemExit on failure."""
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        raise SystemExit(1)


async def http_checks(url: str) -> None:
    """Credentials and method handling, with plain HTTP."""
    async with httpx2.AsyncClient(timeout=30) as http:
        anonymous = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"},
        )
        challenge = anonymous.headers.get("www-authenticate", "")
        check(anonymous.status_code == 401, f"POST without a key -> {anonymous.status_code}")
        check(challenge == 'Bearer realm="rearview"', f"WWW-Authenticate: {challenge} (no OAuth pointer)")
        get = await http.get(url, headers={"accept": "text/event-stream"})
        check(get.status_code in (401, 405), f"GET /mcp -> {get.status_code} (405, or 401 before auth)")


async def tool_round(url: str, key: str, mode: str) -> None:
    """One session with the official client in `mode`: list, write, search, get, forget."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    marker = uuid.uuid4().hex[:8]
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        check(tools >= TOOLS, f"[{mode}] tools/list has the {len(TOOLS)} memory tools")
        content = f"Smoke test {marker}: the user prefers dark roast coffee."
        written = await client.call_tool("memory_write", {"content": content, "tags": ["smoke"]})
        data = written.structured_content or {}
        check(not written.is_error and data.get("action") == "created", f"[{mode}] memory_write -> created")
        memory_id = data["memory"]["id"]
        found = await client.call_tool("memory_search", {"query": f"smoke test {marker} coffee", "top_k": 5})
        hits = [hit["id"] for hit in (found.structured_content or {}).get("results", [])]
        check(memory_id in hits, f"[{mode}] memory_search finds it ({len(hits)} hits)")
        got = await client.call_tool("memory_get", {"memory_id": memory_id})
        check((got.structured_content or {}).get("content") == content, f"[{mode}] memory_get returns it")
        gone = await client.call_tool("memory_forget", {"ids": [memory_id], "hard": True})
        check((gone.structured_content or {}).get("forgotten") == [memory_id], f"[{mode}] memory_forget")


def _default(path: str, env: str) -> str | None:
    value = os.environ.get(env)
    if value:
        return value
    file = HERE / ".rearview" / path
    return file.read_text(encoding="utf-8").strip() if file.is_file() else None


def main() -> int:
    """Run every check against the URL given or left by deploy.sh."""
    parser = argparse.ArgumentParser(description="Smoke-test a deployed Rearview MCP endpoint.")
    parser.add_argument("url", nargs="?", default=_default("mcp-url", "REARVIEW_MCP_URL"))
    parser.add_argument("--key", default=_default("api-key", "REARVIEW_API_KEY"))
    args = parser.parse_args()
    if not args.url or not args.key:
        parser.error("give the MCP URL and --key (or run deploy.sh first)")

    async def run() -> None:
        await http_checks(args.url)
        for mode in ("legacy", "2026-07-28"):
            await tool_round(args.url, args.key, mode)

    asyncio.run(run())
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

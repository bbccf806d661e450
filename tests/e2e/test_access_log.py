"""One access line per request, with no content or credentials, and no SDK chatter (real HTTP server)."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from rearview.api.access_log import tenant_hash
from tests.e2e.server import running_server
from tests.mcp_client import call, connect

SECRET_KEY = "key-alice-very-secret"
CONTENT = "The user keeps their bike in the blue shed"


async def test_each_request_logs_one_line_without_content(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[api_keys]\n"{SECRET_KEY}" = "alice"\n', encoding="utf-8")
    caplog.set_level(logging.INFO)  # every logger at INFO, except the ones the app quiets itself
    with running_server(tmp_path / "data", config_file=config) as url:
        async with connect(url, "2026-07-28", SECRET_KEY) as client:
            await call(client, "memory_write", {"content": CONTENT})
            await call(client, "memory_search", {"query": "where is the bike?"})
        async with httpx.AsyncClient() as http:
            denied = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert denied.status_code == 401

    access = [r for r in caplog.records if r.name == "rearview.access"]
    tools = [r for r in access if getattr(r, "mcp_method", None) == "tools/call"]
    assert [(r.mcp_tool, r.status, r.tenant_hash) for r in tools] == [  # type: ignore[attr-defined]
        ("memory_write", 200, tenant_hash("alice")),
        ("memory_search", 200, tenant_hash("alice")),
    ]
    assert all(r.method == "POST" and r.path == "/mcp" and r.elapsed_ms >= 0 for r in tools)  # type: ignore[attr-defined]
    sent = [r for r in caplog.records if r.getMessage().startswith("HTTP Request:")]  # the clients' own log
    assert len(access) == len(sent)
    rejected = vars(access[-1])  # refused before the body is read: no JSON-RPC method, no tenant
    assert (rejected["status"], "mcp_method" in rejected, "tenant_hash" in rejected) == (401, False, False)

    everything = "\n".join(f"{r.getMessage()} {vars(r)}" for r in caplog.records)
    assert CONTENT not in everything and "bike" not in everything
    assert SECRET_KEY not in everything and "alice" not in everything
    assert not [r for r in caplog.records if r.name.startswith("mcp")]  # "Terminating session: None" and kin

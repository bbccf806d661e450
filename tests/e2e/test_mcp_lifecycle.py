"""Archive and restore through the real MCP endpoint (the archive job runs out of band, as a timer would)."""

from __future__ import annotations

from pathlib import Path

from rearview.bootstrap import build_lifecycle, build_service
from rearview.config.settings import Settings
from tests.e2e.server import running_server
from tests.mcp_client import call, call_error, connect


async def test_archived_memory_is_found_with_include_archived_and_restored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    content = "The office wifi password rotates every Monday; ask Priya for the new one"
    with running_server(data) as url:
        async with connect(url, "2026-07-28") as client:
            args = {
                "content": content,
                "ttl_days": 0.05,
                "tags": ["office"],
            }  # expires within the 1.5 h lookahead of the hourly timer
            written = await call(client, "memory_write", args)
            memory_id = written["id"]

            settings = Settings.load(data_dir=data, embedder="hashing")
            jobs = build_lifecycle(settings, build_service(settings))
            assert jobs.apply_retention(settings.default_tenant).archived == 1

            query = {"query": "office wifi password"}
            assert (await call(client, "memory_search", query))["results"] == []
            found = await call(client, "memory_search", {**query, "include_archived": True})
            assert [(h["id"], h["status"]) for h in found["results"]] == [(memory_id, "archived")]

            restored = await call(client, "memory_restore", {"memory_id": memory_id})
            assert restored["memory"]["status"] == "active" and restored["memory"]["content"] == content
            assert restored["indexed"] is True
            assert (await call(client, "memory_search", query))["results"][0]["id"] == memory_id
            history = await call(client, "memory_history", {"memory_id": memory_id})
            assert [e["action"] for e in history["events"]] == ["created", "archived", "restored"]
            assert "only archived or soft-forgotten memories" in await call_error(
                client, "memory_restore", {"memory_id": memory_id}
            )

"""`memory_ingest` through the official `mcp` client, in both protocol eras."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import running_server
from tests.mcp_client import MODES, call, call_error, connect

CHAT = [
    {"speaker": "Maya", "content": "I prefer oat milk in my coffee.", "message_id": "t1",
     "timestamp": "2026-03-02T09:00:00Z"},
    {"role": "assistant", "content": "Got it, oat milk it is.", "message_id": "t2",
     "timestamp": "2026-03-02T09:00:05Z"},
    {"speaker": "Maya", "content": "我的猫叫团子", "message_id": "t3", "timestamp": "2026-03-02T09:01:00Z"},
]  # fmt: skip


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with running_server(tmp_path / "data") as u:
        yield u


@pytest.mark.parametrize("mode", MODES)
async def test_a_conversation_is_ingested_once_and_recalled(url: str, mode: str) -> None:
    async with connect(url, mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        schema = listed["memory_ingest"].input_schema
        assert schema["required"] == ["messages", "session_id"]
        assert "description" in schema["properties"]["messages"]

        result = await call(client, "memory_ingest", {"messages": CHAT, "session_id": "breakfast"})
        assert (result["mode"], result["created"], result["replayed"]) == ("rules", 5, 0)
        assert [m["facts"] for m in result["messages"]] == [
            ["Maya prefers oat milk in their coffee"],
            [],
            ["Maya的猫叫团子"],
        ]
        episode = await call(client, "memory_get", {"memory_id": result["messages"][0]["memory_id"]})
        assert episode["content"] == "Maya: I prefer oat milk in my coffee."
        assert (
            episode["event_time"].startswith("2026-03-02T09:00:00")
            and episode["metadata"]["message_id"] == "t1"
        )

        again = await call(client, "memory_ingest", {"messages": CHAT, "session_id": "breakfast"})
        assert (again["created"], again["merged"], again["replayed"]) == (0, 0, 5)
        assert (await call(client, "memory_stats", {}))["total"] == 5

        found = await call(
            client, "memory_search", {"query": "what milk does Maya take", "types": ["semantic"]}
        )
        assert found["results"][0]["content"] == "Maya prefers oat milk in their coffee"


@pytest.mark.parametrize("mode", MODES)
async def test_bad_messages_are_refused_by_name_and_nothing_is_written(url: str, mode: str) -> None:
    async with connect(url, mode) as client:
        cases = [
            ({"messages": [], "session_id": "s"}, "messages", "at least 1 item"),
            ({"messages": CHAT}, "session_id", "required"),
            (
                {"messages": [{"content": "hi"}], "session_id": "s"},
                "messages[0].speaker",
                "must not be empty",
            ),
            ({"messages": [{**CHAT[0], "timestamp": "at noon"}], "session_id": "s"}, "timestamp", "ISO-8601"),
            (
                {"messages": [{**CHAT[0], "author": "x"}], "session_id": "s"},
                "messages.0.author",
                "unknown key",
            ),
        ]
        for args, field, problem in cases:
            text = await call_error(client, "memory_ingest", args)
            assert "invalid_input" in text and field in text and problem in text, text
        assert (await call(client, "memory_stats", {}))["total"] == 0

"""Strict tool arguments: unknown keys and values beyond the limits are `invalid_input`, never dropped."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPError

from rearview.api.app import build_mcp
from rearview.api.arguments import compact_schema
from rearview.api.tools.registry import eager_tools
from rearview.limits import (
    MAX_AGENT_ID_CHARS,
    MAX_CONTENT_CHARS,
    MAX_FILTER_IDS,
    MAX_INGEST_CHARS,
    MAX_INGEST_MESSAGES,
    MAX_LABEL_CHARS,
    MAX_METADATA_BYTES,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    MAX_SESSION_ID_CHARS,
    MAX_TAGS,
    MAX_TOP_K,
)
from rearview.models import MemoryType, WriteRequest
from rearview.service.memory_service import MemoryService
from tests.tool_context import tool_context

# The smallest valid call of every tool; a test adds one bad key or value to it.
VALID: dict[str, dict[str, Any]] = {
    "memory_write": {"content": "User prefers tea"},
    "memory_ingest": {"messages": [{"role": "user", "content": "I prefer tea"}], "session_id": "s1"},
    "memory_search": {"query": "tea"},
    "memory_get": {"memory_id": "m1"},
    "memory_update": {"memory_id": "m1", "tags": ["x"]},
    "memory_forget": {"session_id": "s1"},
    "memory_restore": {"memory_id": "m1"},
    "memory_history": {"memory_id": "m1"},
    "memory_stats": {},
    "memory_summarize": {"session_id": "s1"},
}


@pytest.fixture
def mcp(service: MemoryService) -> MCPServer[Any]:
    return build_mcp(service)


async def _refused(mcp: MCPServer[Any], tool: str, args: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as info:
        await mcp.call_tool(tool, args, tool_context())
    message = str(info.value)
    assert message.startswith(f"Error executing tool {tool}: invalid_input: "), message
    return message


async def test_every_tool_schema_forbids_unknown_keys(mcp: MCPServer[Any]) -> None:
    listed = await mcp.list_tools()
    assert {t.name for t in listed} == set(VALID)
    assert all(t.input_schema.get("additionalProperties") is False for t in listed)


def test_each_input_schema_is_what_pydantic_writes_for_the_strict_model(service: MemoryService) -> None:
    """`forbidding_extra` derives the strict schema from the SDK's: the very JSON pydantic would write."""
    tools = eager_tools(service)
    assert not any(t.fn_metadata.arg_model.__pydantic_complete__ for t in tools)  # validator: on first call
    for tool in tools:
        generated = tool.fn_metadata.arg_model.model_json_schema(by_alias=True)
        assert json.dumps(tool.parameters) == json.dumps(compact_schema(generated, keep_descriptions=True))


@pytest.mark.parametrize("tool", sorted(VALID))
async def test_every_tool_refuses_an_unknown_key_naming_it(mcp: MCPServer[Any], tool: str) -> None:
    message = await _refused(mcp, tool, {**VALID[tool], "bogus_key": 1})
    assert "`bogus_key`" in message and "unknown argument" in message


async def test_forget_with_a_misspelt_filter_deletes_nothing_and_suggests_the_real_name(
    mcp: MCPServer[Any], service: MemoryService
) -> None:
    service.write("t1", WriteRequest(content="Deploys go through CI", session_id="s1"))
    service.write("t1", WriteRequest(content="scratch", type=MemoryType.WORKING, session_id="s1"))

    message = await _refused(mcp, "memory_forget", {"session_id": "s1", "type": "working", "hard": True})

    assert "invalid `type`: unknown argument; did you mean `types`?" in message
    assert service.stats("t1").total == 2


async def test_a_misspelt_visibility_stores_nothing(mcp: MCPServer[Any], service: MemoryService) -> None:
    message = await _refused(mcp, "memory_write", {"content": "my secret", "visiblity": "private"})
    assert "did you mean `visibility`?" in message
    assert service.stats("t1").total == 0


async def test_schemas_advertise_the_limits(mcp: MCPServer[Any]) -> None:
    schemas = {t.name: t.input_schema for t in await mcp.list_tools()}
    write = schemas["memory_write"]["properties"]
    assert write["content"]["maxLength"] == MAX_CONTENT_CHARS
    assert write["tags"]["maxItems"] == MAX_TAGS
    assert write["tags"]["items"]["maxLength"] == MAX_LABEL_CHARS
    assert write["metadata"]["maxProperties"] == MAX_METADATA_KEYS
    assert write["agent_id"]["maxLength"] == MAX_AGENT_ID_CHARS
    search = schemas["memory_search"]["properties"]
    assert search["query"]["maxLength"] == MAX_QUERY_CHARS
    assert search["top_k"]["maximum"] == MAX_TOP_K
    assert schemas["memory_forget"]["properties"]["ids"]["maxItems"] == MAX_FILTER_IDS


@pytest.mark.parametrize(
    ("tool", "bad", "field", "limit"),
    [
        ("memory_write", {"content": "x" * (MAX_CONTENT_CHARS + 1)}, "content", MAX_CONTENT_CHARS),
        ("memory_write", {"tags": [f"t{i}" for i in range(MAX_TAGS + 1)]}, "tags", MAX_TAGS),
        ("memory_write", {"entities": ["e" * (MAX_LABEL_CHARS + 1)]}, "entities.0", MAX_LABEL_CHARS),
        (
            "memory_write",
            {"metadata": {f"k{i}": "v" * 400 for i in range(12)}},
            "metadata",
            MAX_METADATA_BYTES,
        ),
        ("memory_write", {"agent_id": "a" * (MAX_AGENT_ID_CHARS + 1)}, "agent_id", MAX_AGENT_ID_CHARS),
        ("memory_search", {"query": "tabs " * 400_000}, "query", MAX_QUERY_CHARS),
        ("memory_search", {"query": " ".join(f"w{i}" for i in range(40))}, "query", MAX_QUERY_TERMS),
        ("memory_search", {"tags": [f"t{i}" for i in range(1500)]}, "tags", MAX_TAGS),
        ("memory_search", {"top_k": MAX_TOP_K + 1}, "top_k", MAX_TOP_K),
        ("memory_forget", {"ids": [f"m{i}" for i in range(MAX_FILTER_IDS + 1)]}, "ids", MAX_FILTER_IDS),
        ("memory_summarize", {"session_id": "s" * 4500}, "session_id", MAX_SESSION_ID_CHARS),
        (
            "memory_ingest",
            {"messages": [{"role": "user", "content": "hi"}] * (MAX_INGEST_MESSAGES + 1)},
            "messages",
            MAX_INGEST_MESSAGES,
        ),
        (
            "memory_ingest",
            {"messages": [{"role": "user", "content": "x" * 3000}] * 40},
            "messages",
            MAX_INGEST_CHARS,
        ),
        (
            "memory_ingest",
            {"messages": [{"role": "user", "content": "x" * (MAX_CONTENT_CHARS + 1)}]},
            "messages.0.content",
            MAX_CONTENT_CHARS,
        ),
    ],
)
async def test_a_value_beyond_a_limit_names_the_field_and_the_limit(
    mcp: MCPServer[Any], tool: str, bad: dict[str, Any], field: str, limit: int
) -> None:
    message = await _refused(mcp, tool, {**VALID[tool], **bad})
    assert f"invalid `{field}`" in message and str(limit) in message
    assert len(message) < 1000  # the caller's huge value is not echoed back


async def test_nested_metadata_is_refused(mcp: MCPServer[Any]) -> None:
    message = await _refused(mcp, "memory_write", {"content": "x", "metadata": {"a": {"b": 1}}})
    assert "invalid `metadata.a" in message


async def test_a_nul_in_content_is_refused(mcp: MCPServer[Any], service: MemoryService) -> None:
    message = await _refused(mcp, "memory_write", {"content": "secret one\x00secret two"})
    assert "invalid `content`" in message and "U+0000" in message
    assert service.stats("t1").total == 0


@pytest.mark.parametrize(
    ("tool", "field"),
    [
        ("memory_write", "event_time"),
        ("memory_search", "time_from"),
        ("memory_search", "reference_time"),
        ("memory_forget", "time_to"),
    ],
)
async def test_a_time_that_overflows_in_utc_names_the_field(
    mcp: MCPServer[Any], tool: str, field: str
) -> None:
    message = await _refused(mcp, tool, {**VALID[tool], field: "0001-01-01T00:30:00+01:00"})
    assert f"invalid `{field}`" in message


async def test_the_guidelines_prompt_refuses_unknown_arguments(mcp: MCPServer[Any]) -> None:
    assert (await mcp.get_prompt("memory_guidelines", None, tool_context())).messages
    with pytest.raises(MCPError, match=r"invalid_input: invalid `topic`: unknown argument"):
        await mcp.get_prompt("memory_guidelines", {"topic": "x"}, tool_context())


async def test_the_profile_resource_refuses_an_oversized_agent_id(mcp: MCPServer[Any]) -> None:
    with pytest.raises(
        ResourceError, match=rf"invalid_input: invalid `agent_id`: .*limit is {MAX_AGENT_ID_CHARS}"
    ):
        await mcp.read_resource(f"memory://profile/{'a' * 5000}", tool_context())


async def test_many_problems_are_counted_not_all_spelled_out(mcp: MCPServer[Any]) -> None:
    tags = ["t" * (MAX_LABEL_CHARS + 1)] * MAX_TAGS
    message = await _refused(mcp, "memory_write", {"content": "x", "tags": tags})
    assert "invalid `tags.0`" in message and f"and {MAX_TAGS - 5} more" in message
    assert "invalid `tags.5`" not in message


async def test_a_metadata_value_past_its_limit_is_one_clear_problem(mcp: MCPServer[Any]) -> None:
    value = "v" * (MAX_METADATA_VALUE_CHARS + 1)
    message = await _refused(mcp, "memory_write", {"content": "x", "metadata": {"k": value}})
    assert message.endswith(
        f"invalid `metadata.k`: is {len(value)} characters; the limit is {MAX_METADATA_VALUE_CHARS}"
    )


@pytest.mark.parametrize(
    ("tool", "key", "meant"),
    [
        ("memory_search", "limit", "top_k"),
        ("memory_search", "max_results", "top_k"),
        ("memory_search", "q", "query"),
        ("memory_search", "since", "time_from"),
        ("memory_get", "id", "memory_id"),
        ("memory_forget", "id", "ids"),
        ("memory_write", "text", "content"),
        ("memory_search", "text", "query"),
    ],
)
async def test_a_name_from_another_memory_api_gets_our_name(
    mcp: MCPServer[Any], tool: str, key: str, meant: str
) -> None:
    message = await _refused(mcp, tool, {**VALID[tool], key: 5})
    assert f"invalid `{key}`: unknown argument; did you mean `{meant}`?" in message


@pytest.mark.parametrize("tool", ["memory_search", "memory_forget", "memory_summarize"])
async def test_a_reversed_time_range_is_an_error_not_an_empty_answer(
    mcp: MCPServer[Any], service: MemoryService, tool: str
) -> None:
    service.write("t1", WriteRequest(content="Deploys go through CI", session_id="s1"))
    args = {**VALID[tool], "time_from": "2026-03-01T00:00:00Z", "time_to": "2026-02-01T00:00:00Z"}
    message = await _refused(mcp, tool, args)
    assert "invalid `time_from`: is after `time_to`" in message
    assert service.stats("t1").total == 1


async def test_a_string_where_a_message_belongs_says_object_and_names_no_class(mcp: MCPServer[Any]) -> None:
    message = await _refused(mcp, "memory_ingest", {"messages": ["I prefer tea"], "session_id": "s1"})
    assert "invalid `messages.0`: must be a JSON object" in message
    assert "MessageArg" not in message and "instance of" not in message


async def test_openais_name_field_is_the_speaker(mcp: MCPServer[Any], service: MemoryService) -> None:
    from rearview.models import MemoryFilter

    args = {"messages": [{"role": "user", "name": "Li", "content": "I prefer tea"}], "session_id": "s1"}
    await mcp.call_tool("memory_ingest", args, tool_context())
    stored = service.store.list_memories("t1", MemoryFilter(), limit=10).items
    assert {m.metadata["speaker"] for m in stored} == {"Li"}


async def test_search_reads_last_week_against_the_reference_time(
    mcp: MCPServer[Any], service: MemoryService
) -> None:
    for day, place in (("2025-06-10", "ramen"), ("2025-08-12", "taco")):
        await mcp.call_tool(
            "memory_write",
            {"content": f"We tried a {place} place", "type": "episodic", "event_time": f"{day}T12:00:00Z"},
            tool_context(),
        )
    for now, place in (("2025-06-18T09:00:00Z", "ramen"), ("2025-08-19T09:00:00Z", "taco")):
        result = await mcp.call_tool(
            "memory_search",
            {"query": "which place did we try last week", "reference_time": now, "explain": True},
            tool_context(),
        )
        hits = result.structured_content["results"]  # type: ignore[union-attr]
        assert place in hits[0]["content"] and hits[0]["why"]["temporal"] == 1.0


async def test_an_ingested_message_may_fill_the_content_limit_with_its_speaker_prefix(
    mcp: MCPServer[Any], service: MemoryService
) -> None:
    room = MAX_CONTENT_CHARS - len("user: ")
    schema = {t.name: t.input_schema for t in await mcp.list_tools()}["memory_ingest"]
    assert f"({room} for 'user')" in str(schema)  # the schema says how much room the prefix takes
    fits = {"messages": [{"role": "user", "content": "x" * room}], "session_id": "s1"}
    await mcp.call_tool("memory_ingest", fits, tool_context())
    too_long = {"messages": [{"role": "user", "content": "y" * (room + 1)}], "session_id": "s1"}
    message = await _refused(mcp, "memory_ingest", too_long)
    assert f"invalid `messages[0].content`: is {room + 1} characters; the limit is {room}" in message

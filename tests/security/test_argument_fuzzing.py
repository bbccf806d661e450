"""Argument fuzzing from the tools' own advertised input schemas, plus hostile mutations.

Invariants for every call: the answer is a result or a structured tool error whose message starts
with an error kind (`invalid_input: ...`), never the SDK's generic "Error executing tool"; the
server stays up (the next call answers); a failed call writes nothing (stats unchanged).

Generated calls run as tenant B, mutations as tenant A, so neither disturbs the other's memories.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis_jsonschema import from_schema
from mcp.types import CallToolResult

from tests.mcp_client import BlockingClient, blocking_client

MODE = "2026-07-28"
KINDS = ("invalid_input", "not_found", "conflict", "unavailable", "unauthenticated")
# The SDK puts this before a ToolError's message; what follows it is ours and must start with a kind.
SDK_PREFIX = re.compile(r"^Error executing tool \w+: ")
TOOLS = [
    "memory_write", "memory_ingest", "memory_search", "memory_get", "memory_update", "memory_forget",
    "memory_history", "memory_stats", "memory_summarize", "memory_restore",
]  # fmt: skip


@pytest.fixture(scope="module")
def tenant_a(keyed_url: str) -> Iterator[BlockingClient]:
    with blocking_client(keyed_url, MODE, "key-tenant-a") as client:
        yield client


@pytest.fixture(scope="module")
def tenant_b(keyed_url: str) -> Iterator[BlockingClient]:
    with blocking_client(keyed_url, MODE, "key-tenant-b") as client:
        yield client


@pytest.fixture(scope="module")
def schemas(tenant_a: BlockingClient) -> dict[str, dict[str, Any]]:
    return {tool.name: tool.input_schema for tool in tenant_a.tools()}


def counts(client: BlockingClient) -> dict[str, Any]:
    stats = client.call("memory_stats", {})
    return {key: stats[key] for key in ("total", "by_type", "by_status", "index_documents")}


def error_kind(text: str) -> str | None:
    """The error kind the message starts with (after the SDK's prefix), or None if it has none."""
    kind = SDK_PREFIX.sub("", text).split(":", 1)[0]
    return kind if kind in KINDS else None


def checked(client: BlockingClient, tool: str, args: dict[str, Any]) -> CallToolResult:
    """Call the tool and assert the invariants every answer must keep."""
    before = counts(client)
    result = client.raw(tool, args)
    after = counts(client)  # also proves the server is still up
    if result.is_error:
        text = str(result.content[0].text)  # type: ignore[union-attr]
        assert error_kind(text), f"unstructured error from {tool}: {text[:300]}"
        assert after == before, f"failed {tool} changed the store: {before} -> {after}"
    else:
        assert result.structured_content is not None
    return result


def refused(client: BlockingClient, tool: str, args: dict[str, Any], kind: str = "invalid_input") -> str:
    """Call the tool, keep the invariants, and return the refusal's message (which must be of `kind`)."""
    result = checked(client, tool, args)
    assert result.is_error, f"{tool} accepted {str(args)[:200]}"
    text = str(result.content[0].text)  # type: ignore[union-attr]
    assert error_kind(text) == kind, text
    return text


# ------------------------------------------------------------------- schema-generated calls


@pytest.mark.parametrize("tool", TOOLS)
def test_schema_generated_arguments_keep_the_invariants(
    tenant_b: BlockingClient, schemas: dict[str, dict[str, Any]], tool: str
) -> None:
    @settings(
        max_examples=25,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(args=from_schema(schemas[tool]))
    def run(args: dict[str, Any]) -> None:
        checked(tenant_b, tool, args)

    run()


# ------------------------------------------------------------------------------ mutations


@pytest.fixture
def base(tenant_a: BlockingClient) -> dict[str, dict[str, Any]]:
    """The smallest valid arguments of each tool, about a fresh memory of tenant A."""
    memory_id = tenant_a.call("memory_write", {"content": "Fuzzing base: the build runs on Fridays"})["id"]
    return {
        "memory_write": {"content": "Fuzzing mutation: the deploy window is 9 to 5"},
        "memory_ingest": {"messages": [{"role": "user", "content": "Fuzzing turn"}], "session_id": "fuzz"},
        "memory_search": {"query": "deploy window"},
        "memory_get": {"memory_id": memory_id},
        "memory_update": {"memory_id": memory_id, "importance": 2},
        "memory_forget": {"session_id": "no-such-session"},
        "memory_history": {"memory_id": memory_id},
        "memory_stats": {},
        "memory_summarize": {"session_id": "no-such-session"},
        "memory_restore": {"memory_id": memory_id},
    }


@pytest.mark.parametrize("tool", TOOLS)
def test_unknown_argument_is_refused_by_name(
    tenant_a: BlockingClient, base: dict[str, dict[str, Any]], tool: str
) -> None:
    assert "zz_unknown" in refused(tenant_a, tool, {**base[tool], "zz_unknown": 1})


TYPOS = {  # a one-letter slip on a real argument, and the name the refusal should suggest
    "memory_write": ("visiblity", "private", "visibility"),
    "memory_ingest": ("sesion_id", "s1", "session_id"),
    "memory_search": ("sesion_id", "s1", "session_id"),
    "memory_get": ("memoryid", "x", "memory_id"),
    "memory_update": ("expected_vesion", 1, "expected_version"),
    "memory_forget": ("type", "working", "types"),
    "memory_history": ("memoryid", "x", "memory_id"),
    "memory_stats": ("agnet_id", "x", None),
    "memory_summarize": ("sesion_id", "s1", "session_id"),
    "memory_restore": ("agentid", "x", "agent_id"),
}


@pytest.mark.parametrize("tool", TOOLS)
def test_misspelt_argument_is_refused_with_the_closest_name(
    tenant_a: BlockingClient, base: dict[str, dict[str, Any]], tool: str
) -> None:
    typo, value, closest = TYPOS[tool]
    text = refused(tenant_a, tool, {**base[tool], typo: value})
    assert typo in text and (closest is None or closest in text), text


def test_misspelt_forget_filter_deletes_nothing(tenant_a: BlockingClient) -> None:
    session = "fuzz-typo-session"
    for kind in ("working", "semantic"):
        tenant_a.call(
            "memory_write", {"content": f"Typo guard: a {kind} note", "type": kind, "session_id": session}
        )
    refused(tenant_a, "memory_forget", {"session_id": session, "type": "working", "hard": True})


@pytest.mark.parametrize("tool", TOOLS)
def test_input_schema_forbids_unknown_arguments(schemas: dict[str, dict[str, Any]], tool: str) -> None:
    assert schemas[tool].get("additionalProperties") is False


def test_prompt_refuses_unknown_arguments(tenant_a: BlockingClient) -> None:
    with pytest.raises(Exception, match="zz_unknown"):
        tenant_a.prompt("memory_guidelines", {"zz_unknown": "1"})


def wrong_value(prop: dict[str, Any]) -> object:
    """A value of a JSON type the property does not accept."""
    types = {branch.get("type") for branch in prop.get("anyOf", [prop])} | {prop.get("type")}
    if types & {"string"} or "$ref" in prop:
        return ["not", "a", "string"]
    return "not-a-number" if types & {"integer", "number", "boolean", "array", "object"} else 12345


# Kept in step with the advertised schemas by test_the_mutation_tables_cover_every_argument.
SCHEMA_PROPERTIES: dict[str, tuple[str, ...]] = {
    "memory_write": (
        "content", "type", "importance", "confidence", "tags", "entities", "metadata", "event_time",
        "ttl_days", "supersedes", "idempotency_key", "agent_id", "session_id", "visibility", "cues",
    ),
    "memory_ingest": ("messages", "session_id", "agent_id", "visibility"),
    "memory_search": (
        "query", "alternatives", "top_k", "types", "tags", "session_id", "time_from", "time_to", "min_score",
        "include_superseded", "include_archived", "reference_time", "as_of", "explain", "agent_id",
    ),
    "memory_get": ("memory_id", "agent_id"),
    "memory_update": (
        "memory_id", "content", "tags", "importance", "confidence", "metadata", "event_time", "ttl_days",
        "expected_version", "cues", "verified", "agent_id",
    ),
    "memory_forget": ("ids", "session_id", "types", "tags", "time_from", "time_to", "hard", "agent_id"),
    "memory_history": ("memory_id", "agent_id"),
    "memory_stats": (),
    "memory_summarize": ("session_id", "time_from", "time_to", "type", "summary", "agent_id"),
    "memory_restore": ("memory_id", "agent_id"),
}  # fmt: skip


def test_the_mutation_tables_cover_every_argument(schemas: dict[str, dict[str, Any]]) -> None:
    assert {tool: tuple(schema["properties"]) for tool, schema in schemas.items()} == SCHEMA_PROPERTIES


@pytest.mark.parametrize(
    ("tool", "prop"),
    [(tool, prop) for tool, props in SCHEMA_PROPERTIES.items() for prop in props],
)
def test_wrong_type_is_refused_naming_the_argument(
    tenant_a: BlockingClient,
    schemas: dict[str, dict[str, Any]],
    base: dict[str, dict[str, Any]],
    tool: str,
    prop: str,
) -> None:
    args = {**base[tool], prop: wrong_value(schemas[tool]["properties"][prop])}
    assert prop in refused(tenant_a, tool, args)


HUGE = "x" * 100_000


def huge_value(prop: dict[str, Any]) -> object | None:
    """A 100 kB string where the property takes a string (or a list of them); None if it takes neither."""
    branches = prop.get("anyOf", [prop])
    if any(b.get("type") == "string" or "$ref" in b for b in branches):
        return HUGE
    if any(b.get("type") == "array" for b in branches):
        return [HUGE]
    if any(b.get("type") == "object" for b in branches):
        return {"note": HUGE}
    return None


STRING_PROPERTIES = [
    (tool, prop)
    for tool, props in SCHEMA_PROPERTIES.items()
    for prop in props
    # numbers and booleans have no length; enums are bounded by their values (see the wrong-type test)
    if prop
    not in {
        "importance",
        "confidence",
        "ttl_days",
        "top_k",
        "min_score",
        "expected_version",
        "hard",
        "explain",
        "verified",
    }
    and prop not in {"type", "types", "visibility"}
    and not prop.startswith("include_")
]


# What a 100 kB value gets today where it is not yet refused short and by name.
@pytest.mark.parametrize(
    ("tool", "prop"),
    STRING_PROPERTIES,
)
def test_huge_string_is_refused_naming_the_argument(
    tenant_a: BlockingClient,
    schemas: dict[str, dict[str, Any]],
    base: dict[str, dict[str, Any]],
    tool: str,
    prop: str,
) -> None:
    value = huge_value(schemas[tool]["properties"][prop])
    assert value is not None
    text = refused(tenant_a, tool, {**base[tool], prop: value})
    assert prop in text and len(text) < 1000, text[:300]  # named, and not echoed back in full


@pytest.mark.parametrize(("tool", "prop"), STRING_PROPERTIES)
def test_control_characters_anywhere_keep_the_invariants(
    tenant_a: BlockingClient,
    schemas: dict[str, dict[str, Any]],
    base: dict[str, dict[str, Any]],
    tool: str,
    prop: str,
) -> None:
    value = huge_value(schemas[tool]["properties"][prop])
    hostile = "a\x00b\x07c\x1b[31md\u202ee"
    mutated = (
        [hostile] if isinstance(value, list) else {"note": hostile} if isinstance(value, dict) else hostile
    )
    checked(tenant_a, tool, {**base[tool], prop: mutated})


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b"], ids=["nul", "bell", "escape"])
def test_control_characters_in_content_are_refused(tenant_a: BlockingClient, char: str) -> None:
    assert "content" in refused(tenant_a, "memory_write", {"content": f"The secret is alpha{char}beta"})


# ------------------------------------------------------------------ known opaque errors (defect 7)

OUT_OF_RANGE_TIME = "0001-01-01T00:30:00+01:00"  # UTC conversion overflows


@pytest.mark.parametrize(
    ("tool", "prop"),
    [
        ("memory_write", "event_time"),
        ("memory_update", "event_time"),
        ("memory_search", "time_from"),
        ("memory_search", "reference_time"),
        ("memory_search", "as_of"),
        ("memory_forget", "time_to"),
        ("memory_summarize", "time_from"),
    ],
)
def test_out_of_range_time_is_refused_naming_the_argument(
    tenant_a: BlockingClient, base: dict[str, dict[str, Any]], tool: str, prop: str
) -> None:
    assert prop in refused(tenant_a, tool, {**base[tool], prop: OUT_OF_RANGE_TIME})


@pytest.mark.parametrize("tool", ["memory_search", "memory_forget"])
def test_thousands_of_filter_tags_are_refused_naming_the_argument(
    tenant_a: BlockingClient, base: dict[str, dict[str, Any]], tool: str
) -> None:
    assert "tags" in refused(tenant_a, tool, {**base[tool], "tags": [f"t{i}" for i in range(1500)]})


def test_overlong_session_id_is_refused_for_what_it_is(tenant_a: BlockingClient) -> None:
    text = refused(tenant_a, "memory_summarize", {"session_id": "s" * 4500})
    assert "session_id" in text and "nothing to summarize" not in text


def test_a_single_long_source_is_summarized_or_refused(tenant_a: BlockingClient) -> None:
    session = "fuzz-long-source"
    content = "The migration covers " + ", ".join(f"service {i}" for i in range(250))
    tenant_a.call("memory_write", {"content": content, "type": "episodic", "session_id": session})
    result = checked(tenant_a, "memory_summarize", {"session_id": session})
    if not result.is_error:
        assert result.structured_content is not None
        summary = tenant_a.call("memory_get", {"memory_id": result.structured_content["id"]})
        assert "service 1" in summary["content"]


# ---------------------------------------------------------------------- JSON-RPC envelopes


@pytest.mark.parametrize("request_id", [{"a": 1}, [1], True], ids=["object", "array", "bool"])
def test_request_with_an_invalid_id_gets_a_json_rpc_error(keyed_url: str, request_id: object) -> None:
    headers = {"Authorization": "Bearer key-tenant-a", "accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {}}
    response = httpx.post(keyed_url, json=body, headers=headers, timeout=10)
    assert response.status_code in {200, 400} and "error" in response.json(), response.text

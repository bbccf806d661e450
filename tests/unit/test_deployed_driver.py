"""The deployed tier's template reading and event shaping, without building or running anything."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.deployed.driver import http_api_event, http_response, matches, route_for
from tests.deployed.rie import Invocation
from tests.deployed.stack import Stack, load

TEMPLATE = load(Path(__file__).resolve().parents[2] / "template.yaml")
NAMES = {"MemoryTable": "t", "ArchiveBucket": "b", "JobsDeadLetterQueue": "jq", "StreamDeadLetterQueue": "sq"}
LOCAL = {"OpenSearchMode": "local", "OpenSearchEndpoint": "http://127.0.0.1:9200", "Embedder": "hashing"}


def test_environment_is_globals_under_the_functions_own_with_parameters_resolved() -> None:
    stack = Stack(TEMPLATE, {**LOCAL, "EmbeddingDimension": "256"}, NAMES)
    mcp, jobs = stack.function("McpFunction"), stack.function("JobsFunction")
    assert (
        mcp.environment["REARVIEW_OPENSEARCH_ENDPOINT"] == "http://127.0.0.1:9200"
    )  # Fn::If, not serverless
    assert mcp.environment["REARVIEW_TABLE_NAME"] == jobs.environment["REARVIEW_TABLE_NAME"] == "t"
    assert mcp.environment["REARVIEW_HASHING_DIMENSION"] == "256"
    assert mcp.environment["REARVIEW_UI"] == "false" and "REARVIEW_UI" not in jobs.environment
    assert (mcp.timeout_s, jobs.timeout_s, mcp.memory_mb) == (29, 900, 1024)
    assert jobs.async_dead_letter_queue == "arn:aws:sqs:us-east-1:123456789012:jq"
    assert [s.input for s in jobs.schedules] == [
        {"job": "decay"},
        {"job": "archive"},
        {"job": "reconcile"},
        {"job": "cues"},
    ]


def test_parameters_are_checked_against_the_template() -> None:
    with pytest.raises(ValueError, match="not one of"):
        Stack(TEMPLATE, {"Embedder": "word2vec"}, NAMES)
    with pytest.raises(ValueError, match="not in the template"):
        Stack(TEMPLATE, {"Embeder": "hashing"}, NAMES)


def test_routes_follow_the_conditions() -> None:
    assert "GET /ui/{proxy+}" not in Stack(TEMPLATE, LOCAL, NAMES).routes()
    with_ui = Stack(TEMPLATE, {**LOCAL, "MemoryBrowser": "Enabled"}, NAMES).routes()
    assert {"POST /mcp", "GET /ui", "GET /ui/{proxy+}", "POST /ui/{proxy+}"} <= set(with_ui)
    assert route_for(with_ui, "GET", "/ui/memories/abc") == ("GET /ui/{proxy+}", {"proxy": "memories/abc"})
    assert route_for(with_ui, "PUT", "/mcp") is None
    assert route_for(with_ui, "GET", "/ui/") is None  # {proxy+} needs at least one character


def test_http_events_and_results_are_payload_2_0() -> None:
    event = http_api_event(
        "POST /mcp",
        {},
        "POST",
        "/mcp?a=1&a=2",
        [("Content-Type", "application/json"), ("Cookie", "s=1; t=2"), ("X-Twice", "a"), ("X-Twice", "b")],
        b'{"jsonrpc":"2.0"}',
    )
    assert event["body"] == '{"jsonrpc":"2.0"}' and not event["isBase64Encoded"]
    assert event["cookies"] == ["s=1", "t=2"] and "cookie" not in event["headers"]
    assert event["headers"]["x-twice"] == "a,b" and event["queryStringParameters"] == {"a": "1,2"}
    binary = http_api_event("POST /mcp", {}, "POST", "/mcp", [("content-type", "image/png")], b"\x89PNG")
    assert binary["isBase64Encoded"] and base64.b64decode(binary["body"]) == b"\x89PNG"

    result = {"statusCode": 303, "headers": {"location": "/ui/"}, "cookies": ["s=2; HttpOnly"], "body": ""}
    assert http_response(Invocation(result, False, 1.0)) == (
        303,
        [("location", "/ui/"), ("set-cookie", "s=2; HttpOnly")],
        b"",
    )
    error = Invocation({"errorType": "KeyError", "errorMessage": "x"}, True, 1.0)
    assert http_response(error)[0] == 500
    assert http_response(Invocation({"a": 1}, False, 1.0)) == (
        200,
        [("content-type", "application/json")],
        b'{"a": 1}',
    )


def test_stream_filter_patterns() -> None:
    (pattern,) = Stack(TEMPLATE, LOCAL, NAMES).function("StreamFunction").streams[0].filter_patterns
    ttl = {
        "eventName": "REMOVE",
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
    }
    assert matches(pattern, ttl)
    assert not matches(pattern, {"eventName": "REMOVE"})
    with pytest.raises(NotImplementedError):
        matches({"eventName": [{"prefix": "RE"}]}, ttl)
    assert json.loads(json.dumps(pattern)) == pattern

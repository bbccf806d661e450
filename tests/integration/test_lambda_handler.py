"""The Lambda handlers, invoked with the real payloads in `events/` against moto.

The MCP function runs exactly as in AWS: DynamoDB store (a moto table built from template.yaml),
the events recorded from the official `mcp` client (both protocol eras), one runtime per
"process" serving many invocations in a row (the warm path), API keys from the same JSON the
`sam local` env file uses. The index is the in-memory one and the embedder the hashing one
(the OpenSearch and Bedrock adapters have their own tests).
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
from aws_lambda_powertools.metrics.provider.cold_start import reset_cold_start_flag
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBStreamEvent
from pydantic import ValidationError

from handlers import jobs, mcp, stream
from handlers._service import lambda_checkpoints, lambda_service
from handlers.mcp import McpRuntime
from rearview.backends.dynamodb import DynamoDBCheckpointStore
from rearview.backends.memory import InMemoryArchive, InMemoryMemoryIndex
from rearview.config.settings import hash_key
from rearview.errors import ArchiveError
from rearview.ports import IndexDocument
from rearview.service.memory_service import MemoryService
from rearview.testing import Fault, FlakyArchive
from tests.events import (
    EVENTS_DIR,
    TENANT_B_KEY,
    load_event,
    rpc_body,
    with_arguments,
    with_header,
    without_header,
)

pytest_plugins = ["tests.fixtures.aws"]  # moto fixtures: dynamodb_table, s3_bucket (from template.yaml)

ERAS = ("mcp-2025-11-25", "mcp-2026-07-28")
TOOLS = {
    "memory_write",
    "memory_search",
    "memory_get",
    "memory_update",
    "memory_forget",
    "memory_history",
    "memory_stats",
    "memory_summarize",
}
METADATA_URL = (
    "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/.well-known/oauth-protected-resource/mcp"
)
ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_ExAmPlE"


@dataclass
class FakeLambdaContext:
    """The parts of the Lambda context object the handlers read."""

    function_name: str = "rearview-mcp"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:rearview-mcp:live"
    aws_request_id: str = "6f1c2d3e-0000-4000-8000-000000000001"
    remaining_ms: int = 29_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def _env_file(name: str = "env.json") -> dict[str, dict[str, str]]:
    data = json.loads((EVENTS_DIR / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture
def lambda_env(monkeypatch: pytest.MonkeyPatch, dynamodb_table: str, s3_bucket: str) -> None:
    """The functions' environment: events/env.json's keys, the store and archive in moto (DynamoDB, S3)."""
    env = _env_file()
    for name, value in {**env["Parameters"], **env["McpFunction"]}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REARVIEW_STORE", "dynamodb")
    monkeypatch.setenv("REARVIEW_TABLE_NAME", dynamodb_table)
    monkeypatch.setenv("REARVIEW_ARCHIVE", "s3")
    monkeypatch.setenv("REARVIEW_ARCHIVE_BUCKET", s3_bucket)
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "RearviewTest")


@pytest.fixture
def runtime(lambda_env: None) -> Iterator[McpRuntime]:
    """One Lambda "process": built once, serving every invocation of the test."""
    built = McpRuntime.from_environment()
    try:
        yield built
    finally:
        built.close()


Invoke = Callable[[dict[str, Any]], dict[str, Any]]


@pytest.fixture
def invoke(runtime: McpRuntime) -> Invoke:
    return lambda event: runtime.handle(event, FakeLambdaContext())


def reply(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC reply in a proxy result (asserting a 200 JSON response)."""
    assert result["statusCode"] == 200, result
    assert result["headers"]["content-type"].startswith("application/json")
    assert result["isBase64Encoded"] is False
    body = json.loads(result["body"])
    assert isinstance(body, dict)
    return body


def tool_result(result: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured result, asserting it succeeded."""
    body = reply(result)
    assert "error" not in body, body
    assert body["result"]["isError"] is False, body
    structured = body["result"]["structuredContent"]
    assert isinstance(structured, dict)
    return structured


def tool_error(result: dict[str, Any]) -> str:
    """The text of a tool error (`isError: true`)."""
    body = reply(result)
    assert body["result"]["isError"] is True, body
    return str(body["result"]["content"][0]["text"])


# ----------------------------------------------------------------------------- MCP: handshake era


def test_initialize_handshake_then_tools_list(invoke: Invoke) -> None:
    init = reply(invoke(load_event("mcp-2025-11-25/initialize")))
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert init["result"]["serverInfo"]["name"] == "rearview"
    assert "tools" in init["result"]["capabilities"]

    ack = invoke(load_event("mcp-2025-11-25/notifications-initialized"))
    assert ack["statusCode"] == 202
    assert ack["body"] == ""

    listed = reply(invoke(load_event("mcp-2025-11-25/tools-list")))
    assert {tool["name"] for tool in listed["result"]["tools"]} >= TOOLS


def test_modern_era_discover_and_tools_list(invoke: Invoke) -> None:
    discovered = reply(invoke(load_event("mcp-2026-07-28/server-discover")))
    assert "2026-07-28" in discovered["result"]["supportedVersions"]
    listed = reply(invoke(load_event("mcp-2026-07-28/tools-list")))
    assert {tool["name"] for tool in listed["result"]["tools"]} >= TOOLS


@pytest.mark.parametrize("era", ERAS)
def test_every_tool_twice_in_one_process(invoke: Invoke, era: str) -> None:
    """Each recorded tools/call, replayed; the second round proves the warm path (and dedup)."""
    actions = []
    for _ in range(2):
        written = tool_result(invoke(load_event(f"{era}/tools-call-memory_write")))
        actions.append(written["action"])
        memory_id = written["id"]
        episode = with_arguments(
            load_event(f"{era}/tools-call-memory_write"),
            content="Deployed v2 to staging; the rollback needed a manual schema migration.",
            type="episodic",
            tags=[],
        )
        tool_result(invoke(episode))

        found = tool_result(invoke(load_event(f"{era}/tools-call-memory_search")))
        assert memory_id in [hit["id"] for hit in found["results"]]
        assert found["degraded"] is False

        got = tool_result(
            invoke(with_arguments(load_event(f"{era}/tools-call-memory_get"), memory_id=memory_id))
        )
        assert got["content"] == "The user prefers pnpm over npm for JavaScript projects."
        updated = tool_result(
            invoke(with_arguments(load_event(f"{era}/tools-call-memory_update"), memory_id=memory_id))
        )
        assert updated["importance"] == 5
        history = tool_result(
            invoke(with_arguments(load_event(f"{era}/tools-call-memory_history"), memory_id=memory_id))
        )
        assert len(history["events"]) >= 2
        stats = tool_result(invoke(load_event(f"{era}/tools-call-memory_stats")))
        assert stats
        summary = tool_result(invoke(load_event(f"{era}/tools-call-memory_summarize")))
        assert summary["action"] in {"created", "merged"}
        forgotten = tool_result(
            invoke(with_arguments(load_event(f"{era}/tools-call-memory_forget"), ids=[memory_id]))
        )
        assert forgotten["forgotten"] == [memory_id]
    assert actions == ["created", "created"]  # forgotten in round one, so round two writes anew


def test_unknown_memory_is_a_tool_error_not_a_crash(invoke: Invoke) -> None:
    event = with_arguments(
        load_event("mcp-2026-07-28/tools-call-memory_get"), memory_id="01NOTAREALID0000000000000"
    )
    assert tool_error(invoke(event)).count("not_found: memory")


@pytest.mark.parametrize("era", ERAS)
def test_protocol_errors_are_the_specs_on_lambda_too(invoke: Invoke, era: str) -> None:
    """The guard and the SDK middleware of `create_app` (issue 33 item 4) serve the Lambda path alike."""
    stats = load_event(f"{era}/tools-call-memory_stats")

    def with_body(body: str, name: str) -> dict[str, Any]:
        out = with_header(with_header(stats, "mcp-name", name), "content-length", str(len(body.encode())))
        out["body"] = body
        if era == "mcp-2025-11-25":
            del out["headers"]["mcp-name"]
        return out

    duplicated = stats["body"].replace('"name":"memory_stats"', '"name":"memory_stats","name":"memory_write"')
    refused = invoke(
        with_body(duplicated.replace('"arguments":{}', '"arguments":{"content":"x"}'), "memory_write")
    )
    assert refused["statusCode"] == 400
    assert json.loads(refused["body"])["error"] == {
        "code": -32600,
        "message": 'Invalid Request: duplicate key "name" in a JSON object',
    }
    assert tool_result(invoke(stats))["total"] == 0  # memory_write never ran
    unknown = invoke(with_body(stats["body"].replace('"memory_stats"', '"memory_nope"'), "memory_nope"))
    assert json.loads(unknown["body"])["error"] == {"code": -32602, "message": "Unknown tool: memory_nope"}


def test_function_url_events(invoke: Invoke) -> None:
    init = reply(invoke(load_event("function-url/initialize")))
    assert init["result"]["protocolVersion"] == "2025-11-25"
    found = tool_result(invoke(load_event("function-url/tools-call-memory_search")))
    assert found["results"] == []


# ----------------------------------------------------------------------------- HTTP and auth


@pytest.mark.parametrize("name", ["http/get-mcp", "http/delete-mcp"])
def test_get_and_delete_are_405_at_once(invoke: Invoke, name: str) -> None:
    started = time.perf_counter()
    result = invoke(load_event(name))
    assert time.perf_counter() - started < 2.0
    assert result["statusCode"] == 405
    assert result["headers"]["allow"] == "POST"


@pytest.mark.parametrize(
    ("name", "challenge"),
    [
        ("http/post-mcp-no-credentials", 'Bearer realm="rearview"'),
        ("http/post-mcp-wrong-key", 'Bearer realm="rearview", error="invalid_token"'),
    ],
)
def test_api_key_mode_answers_401_without_pointing_at_oauth(
    invoke: Invoke, name: str, challenge: str
) -> None:
    result = invoke(load_event(name))
    assert result["statusCode"] == 401
    assert result["headers"]["www-authenticate"] == challenge


def test_api_key_mode_serves_no_protected_resource_metadata(invoke: Invoke) -> None:
    assert invoke(load_event("http/get-protected-resource-metadata"))["statusCode"] == 404


def test_a_tenant_never_reads_another_tenants_memories(invoke: Invoke) -> None:
    written = tool_result(invoke(load_event("mcp-2026-07-28/tools-call-memory_write")))
    memory_id = written["id"]

    other = tool_result(invoke(load_event("mcp-2026-07-28/tools-call-memory_search-tenant-b")))
    assert other["results"] == []
    peek = with_header(
        with_arguments(load_event("mcp-2026-07-28/tools-call-memory_get"), memory_id=memory_id),
        "authorization",
        f"Bearer {TENANT_B_KEY}",
    )
    assert tool_error(invoke(peek)).count("not_found: memory")

    own = tool_result(invoke(load_event("mcp-2026-07-28/tools-call-memory_search")))
    assert [hit["id"] for hit in own["results"]] == [memory_id]


def test_a_snapstart_restore_keeps_serving(runtime: McpRuntime) -> None:
    runtime.after_restore()  # re-reads the key map (here: REARVIEW_API_KEYS_JSON) on the next request
    assert tool_result(
        runtime.handle(load_event("mcp-2026-07-28/tools-call-memory_stats"), FakeLambdaContext())
    )


def test_non_http_event_is_400(invoke: Invoke) -> None:
    result = invoke(load_event("jobs/decay"))
    assert result["statusCode"] == 400
    assert json.loads(result["body"])["error"] == "unsupported_event"


# ----------------------------------------------------------------------------- JWT mode


@pytest.fixture
def jwt_runtime(monkeypatch: pytest.MonkeyPatch, lambda_env: None) -> Iterator[McpRuntime]:
    for name, value in _env_file("env-jwt.json")["McpFunction"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REARVIEW_JWT_ISSUER", ISSUER)  # the template sets it in jwt mode
    built = McpRuntime.from_environment()
    try:
        yield built
    finally:
        built.close()


def test_jwt_mode_takes_the_tenant_from_the_authorizer_claims(jwt_runtime: McpRuntime) -> None:
    event = load_event("jwt/tools-call-memory_write")
    written = tool_result(jwt_runtime.handle(event, FakeLambdaContext()))
    claimed = event["requestContext"]["authorizer"]["jwt"]["claims"]["org_id"]
    stored = jwt_runtime.service.store.get(claimed, written["id"])
    assert stored is not None
    assert stored.tenant_id == "tenant-jwt"
    assert reply(jwt_runtime.handle(load_event("jwt/tools-list"), FakeLambdaContext()))


def test_jwt_mode_refuses_events_without_claims(jwt_runtime: McpRuntime) -> None:
    unauthorized = load_event("jwt/tools-list")
    del unauthorized["requestContext"]["authorizer"]
    assert jwt_runtime.handle(unauthorized, FakeLambdaContext())["statusCode"] == 401
    # An API key is no substitute for the gateway's validated claims in jwt mode.
    keyed = load_event("mcp-2026-07-28/tools-list")
    assert jwt_runtime.handle(keyed, FakeLambdaContext())["statusCode"] == 401


def with_path(event: dict[str, Any], path: str) -> dict[str, Any]:
    """An HTTP API GET event for another path (the route key follows it)."""
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["routeKey"] = event["requestContext"]["routeKey"] = f"GET {path}"
    return event


def test_jwt_mode_points_clients_at_metadata_naming_the_issuer(jwt_runtime: McpRuntime) -> None:
    unauthorized = load_event("jwt/tools-list")
    del unauthorized["requestContext"]["authorizer"]
    challenge = jwt_runtime.handle(unauthorized, FakeLambdaContext())["headers"]["www-authenticate"]
    assert f'resource_metadata="{METADATA_URL}"' in challenge
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        event = with_path(load_event("http/get-protected-resource-metadata"), path)
        metadata = json.loads(jwt_runtime.handle(event, FakeLambdaContext())["body"])
        assert metadata["authorization_servers"] == [ISSUER]
        assert metadata["resource"] == "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/mcp"


@pytest.fixture
def jwt_agent_runtime(monkeypatch: pytest.MonkeyPatch, lambda_env: None) -> Iterator[McpRuntime]:
    """jwt mode with `REARVIEW_AGENT_CLAIM=sub`: each token is bound to the agent in its `sub` claim."""
    for name, value in _env_file("env-jwt.json")["McpFunction"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REARVIEW_AGENT_CLAIM", "sub")
    built = McpRuntime.from_environment()
    try:
        yield built
    finally:
        built.close()


def test_jwt_agent_claim_binds_the_token_to_its_agent(jwt_agent_runtime: McpRuntime) -> None:
    event = load_event("jwt/tools-call-memory_write")
    handle = partial(jwt_agent_runtime.handle, context=FakeLambdaContext())
    assert tool_result(handle(event))["agent_id"] == "user-7f3a"
    claimed = tool_error(handle(with_arguments(event, agent_id="someone-else")))
    assert "invalid_input: invalid `agent_id`: this credential is bound to agent `user-7f3a`" in claimed
    del event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"]
    assert handle(event)["statusCode"] == 401  # a token without the agent claim is refused


def test_an_api_key_bound_to_an_agent_acts_as_that_agent(
    monkeypatch: pytest.MonkeyPatch, lambda_env: None
) -> None:
    key_map = {hash_key(TENANT_B_KEY): {"tenant": "tenant-b", "agent": "claude-code"}}
    monkeypatch.setenv("REARVIEW_API_KEYS_JSON", json.dumps(key_map))
    built = McpRuntime.from_environment()
    try:
        event = with_header(
            with_arguments(load_event("mcp-2026-07-28/tools-call-memory_write"), visibility="private"),
            "authorization",
            f"Bearer {TENANT_B_KEY}",
        )
        written = tool_result(built.handle(event, FakeLambdaContext()))
        assert written["agent_id"] == "claude-code"
        stored = built.service.store.get("tenant-b", written["id"])
        assert stored is not None and stored.visibility.value == "private"
        claimed = tool_error(built.handle(with_arguments(event, agent_id="cursor"), FakeLambdaContext()))
        assert "bound to agent `claude-code`" in claimed
    finally:
        built.close()


# ----------------------------------------------------------------------------- the entry point


def test_handler_entry_point_is_warm_after_the_first_call(
    lambda_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    mcp.runtime.cache_clear()
    reset_cold_start_flag()  # a fresh runtime: whatever invoked the handler earlier in this process
    logs = io.StringIO()
    previous = mcp.logger.registered_handler.setStream(logs)
    try:
        first = mcp.handler(load_event("mcp-2026-07-28/tools-call-memory_write"), FakeLambdaContext())
        built = mcp.runtime()
        second = mcp.handler(load_event("mcp-2026-07-28/tools-call-memory_search"), FakeLambdaContext())
        assert mcp.runtime() is built
        assert tool_result(first)["action"] == "created"
        assert len(tool_result(second)["results"]) == 1
    finally:
        mcp.runtime().close()
        mcp.runtime.cache_clear()
        mcp.logger.registered_handler.setStream(previous)
    out = capsys.readouterr().out.splitlines()
    emitted = [json.loads(line) for line in out if line.startswith('{"_aws"')]
    names = {m["Name"] for blob in emitted for d in blob["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    assert {"ColdStart", "MemoryWrites", "MemorySearches", "SearchLatency"} <= names
    served = [json.loads(line) for line in logs.getvalue().splitlines() if '"message":"request"' in line]
    assert [log["correlation_id"] for log in served] == ["Rv000013ExAmPlE=", "Rv000014ExAmPlE="]
    assert [log["mcp_tool"] for log in served] == ["memory_write", "memory_search"]
    assert [log["status"] for log in served] == [200, 200]
    assert all(len(log["tenant_hash"]) == 12 and log["mcp_method"] == "tools/call" for log in served)
    assert "pnpm" not in logs.getvalue() and "rv-example-tenant-a-key" not in logs.getvalue()


def _malformed_events() -> dict[str, Any]:
    write = load_event("mcp-2026-07-28/tools-call-memory_write")
    not_base64 = {**write, "isBase64Encoded": True, "body": "{not base64!"}
    list_headers = {**write, "headers": ["content-type", "application/json"]}
    text_cookies = {**write, "cookies": "a=1"}
    list_context = {**write, "requestContext": ["http"]}
    return {
        "list": [write],
        "string": "GET /mcp",
        "null": None,
        "not-base64": not_base64,
        "headers-not-an-object": list_headers,
        "cookies-not-a-list": text_cookies,
        "request-context-not-an-object": list_context,
    }


@pytest.mark.parametrize("name", list(_malformed_events()))
def test_the_entry_point_answers_400_to_any_malformed_event(
    lambda_env: None, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33.5: a client's malformed event is a 400 with a reason and a log line, never a raise (502)."""
    mcp.runtime.cache_clear()
    logs = io.StringIO()
    previous = mcp.logger.registered_handler.setStream(logs)
    try:
        result = mcp.handler(_malformed_events()[name], FakeLambdaContext())  # type: ignore[arg-type]
    finally:
        mcp.runtime().close()
        mcp.runtime.cache_clear()
        mcp.logger.registered_handler.setStream(previous)
    assert result["statusCode"] == 400
    assert json.loads(result["body"])["error"] == "unsupported_event"
    assert '"message":"unsupported event"' in logs.getvalue()
    assert "Traceback" not in logs.getvalue() + capsys.readouterr().err


# ----------------------------------------------------------------------------- stream and jobs


def _service(index: InMemoryMemoryIndex, archive: InMemoryArchive) -> MemoryService:
    from rearview.backends.memory import InMemoryMemoryStore
    from rearview.embedders.hashing import HashingEmbedder

    return MemoryService(InMemoryMemoryStore(), index, HashingEmbedder(256), archive=archive)


def test_stream_archives_ttl_expired_memories_and_drops_them_from_the_index() -> None:
    event = load_event("stream/ttl-remove")
    expired = stream.expired_memory(next(iter(DynamoDBStreamEvent(event).records)))
    assert expired is not None
    index, archive = InMemoryMemoryIndex(256), InMemoryArchive()
    service = _service(index, archive)
    index.upsert([IndexDocument(expired, service.embedder.embed_documents([expired.content])[0])])
    assert index.count(expired.tenant_id) == 1

    assert stream.process(event, lambda: service) == {"batchItemFailures": []}
    assert index.count(expired.tenant_id) == 0
    stub = service.store.get(expired.tenant_id, expired.id)
    assert stub is not None and stub.status.value == "archived"
    assert list(archive.iter_refs(expired.tenant_id)) == [stub.archive_ref]
    # A redelivered batch changes nothing (the consumer is idempotent).
    assert stream.process(event, lambda: service) == {"batchItemFailures": []}
    assert list(archive.iter_refs(expired.tenant_id)) == [stub.archive_ref]


def test_stream_reports_the_first_failing_record_and_every_record_after_it() -> None:
    event = load_event("stream/ttl-remove")
    down = FlakyArchive(Fault(down=True, error=ArchiveError))  # S3 is down: the record is reported, not lost
    service = _service(InMemoryMemoryIndex(256), down)
    sequences = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
    assert stream.process(event, lambda: service) == {
        "batchItemFailures": [{"itemIdentifier": s} for s in sequences]
    }


def test_stream_attempts_nothing_after_a_failure() -> None:
    event = load_event("stream/ttl-remove")
    skipped, expiring = event["Records"][1], event["Records"][0]
    again = json.loads(json.dumps(expiring))
    again["dynamodb"]["SequenceNumber"] = "4421584500000000017450439099"
    event["Records"] = [skipped, expiring, again]
    fault = Fault(on_call=1, error=ArchiveError)  # only the first archive call fails
    service = _service(InMemoryMemoryIndex(256), FlakyArchive(fault))
    assert stream.process(event, lambda: service) == {
        "batchItemFailures": [
            {"itemIdentifier": expiring["dynamodb"]["SequenceNumber"]},
            {"itemIdentifier": "4421584500000000017450439099"},
        ]
    }
    assert fault.calls == 1  # the record after the failure was not attempted


def test_stream_skips_application_deletes_and_non_memory_items() -> None:
    event = load_event("stream/ttl-remove")
    records = list(DynamoDBStreamEvent(event).records)
    assert [stream.is_ttl_removal(r) for r in records] == [True, True, False]
    assert stream.expired_memory(records[1]) is None  # a dedup lookup item, not a memory


def test_stream_handler_entry_point(lambda_env: None) -> None:
    lambda_service.cache_clear()
    try:
        result = stream.handler(load_event("stream/ttl-remove"), FakeLambdaContext(function_name="stream"))
    finally:
        lambda_service.cache_clear()
    assert result == {"batchItemFailures": []}


@pytest.mark.parametrize("name", ["jobs/decay", "jobs/archive", "jobs/reconcile", "jobs/cues"])
def test_jobs_handler_runs_the_scheduler_payloads(lambda_env: None, name: str) -> None:
    event = load_event(name)
    lambda_service.cache_clear()
    lambda_checkpoints.cache_clear()
    try:
        result = jobs.handler(event, FakeLambdaContext(function_name="jobs", remaining_ms=900_000))
    finally:
        lambda_service.cache_clear()
        lambda_checkpoints.cache_clear()
    assert result["job"] == event["job"]
    assert result["tenant"] == event.get("tenant")
    assert result["status"] == "complete"
    assert result["result"]["job"] == event["job"]


def test_jobs_handler_keeps_progress_in_the_table(
    lambda_env: None, dynamodb_table: str, dynamodb_client: Any
) -> None:
    event = load_event("jobs/reconcile")
    lambda_service.cache_clear()
    lambda_checkpoints.cache_clear()
    try:
        jobs.handler(event, FakeLambdaContext(function_name="jobs", remaining_ms=900_000))
    finally:
        lambda_service.cache_clear()
        lambda_checkpoints.cache_clear()
    # A cold start reads what the last run saved, so a run cut short resumes instead of rescanning.
    saved = DynamoDBCheckpointStore(dynamodb_table, dynamodb_client).load(event["tenant"], event["job"])
    assert saved is not None and json.loads(saved)["completed_at"] is not None


def test_jobs_handler_rejects_a_malformed_event_before_building_the_service() -> None:
    lambda_service.cache_clear()
    context = FakeLambdaContext(function_name="jobs", remaining_ms=900_000)
    with pytest.raises(ValidationError, match="job"):
        jobs.handler({"job": "compact"}, context)
    with pytest.raises(ValidationError, match="tenants"):
        jobs.handler({"job": "decay", "tenants": "x"}, context)
    with pytest.raises(ValidationError, match="tenant"):
        jobs.handler({"job": "decay", "tenant": ""}, context)
    assert lambda_service.cache_info().currsize == 0


def test_every_http_event_is_valid_payload_v2() -> None:
    for folder in (*ERAS, "http", "jwt", "function-url"):
        for path in (EVENTS_DIR / folder).glob("*.json"):
            event = load_event(f"{folder}/{path.stem}")
            assert event["version"] == "2.0", path
            assert event["requestContext"]["http"]["method"] in {"GET", "POST", "DELETE"}, path
            if "body" in event:
                assert rpc_body(event)["jsonrpc"] == "2.0"
                assert int(event["headers"]["content-length"]) == len(event["body"].encode())
            if folder in ERAS or folder == "jwt":
                assert "authorization" in event["headers"]
    assert "authorization" not in without_header(load_event("http/get-mcp"), "authorization")["headers"]


# ----------------------------------------------------------------------------- the real engine


@pytest.mark.opensearch
def test_handler_on_the_real_opensearch_engine(
    monkeypatch: pytest.MonkeyPatch, lambda_env: None, opensearch_url: str
) -> None:
    """The index the template wires in: created at init (ensure_index), written and searched via events."""
    from opensearchpy import OpenSearch

    alias = f"rv-lambda-{uuid.uuid4().hex[:8]}"
    for name, value in {
        "REARVIEW_INDEX": "opensearch",
        "REARVIEW_OPENSEARCH_ENDPOINT": opensearch_url,
        "REARVIEW_OPENSEARCH_MODE": "local",
        "REARVIEW_OPENSEARCH_ENGINE": "lucene",
        "REARVIEW_OPENSEARCH_INDEX": alias,
    }.items():
        monkeypatch.setenv(name, value)
    raw = OpenSearch(hosts=[opensearch_url], timeout=30)
    runtime = McpRuntime.from_environment()
    try:
        assert raw.indices.exists_alias(name=alias)
        written = tool_result(
            runtime.handle(load_event("mcp-2026-07-28/tools-call-memory_write"), FakeLambdaContext())
        )
        assert written["indexed"] is True
        found: list[str] = []
        deadline = time.monotonic() + 10  # the index refreshes about once a second
        while written["id"] not in found and time.monotonic() < deadline:
            event = with_arguments(load_event("mcp-2025-11-25/tools-call-memory_search"), explain=True)
            result = tool_result(runtime.handle(event, FakeLambdaContext()))
            assert result["degraded"] is False
            found = [hit["id"] for hit in result["results"] if hit["why"]["vector_score"] > 0]
            time.sleep(0.2)
        assert written["id"] in found
    finally:
        runtime.close()
        raw.indices.delete(index=f"{alias}*", ignore_unavailable=True)

"""The memory browser through the Lambda handler: off unless `REARVIEW_UI=true`, then signed in by cookie.

API Gateway payload 2.0 carries cookies apart from the headers (`event["cookies"]`, the result's
`cookies`); the adapter maps both ways, so the session works as under `rearview serve`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import pytest

from handlers.mcp import McpRuntime
from rearview.ui.security_headers import CSP
from tests.events import EVENTS_DIR, TENANT_B_KEY, load_event

pytest_plugins = ["tests.fixtures.aws"]


class FakeLambdaContext:
    function_name = "rearview-mcp"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:rearview-mcp:live"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, dynamodb_table: str, s3_bucket: str) -> None:
    data = json.loads((EVENTS_DIR / "env.json").read_text(encoding="utf-8"))
    for name, value in {**data["Parameters"], **data["McpFunction"]}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REARVIEW_STORE", "dynamodb")
    monkeypatch.setenv("REARVIEW_TABLE_NAME", dynamodb_table)
    monkeypatch.setenv("REARVIEW_ARCHIVE", "s3")
    monkeypatch.setenv("REARVIEW_ARCHIVE_BUCKET", s3_bucket)


@contextmanager
def runtime() -> Iterator[McpRuntime]:
    built = McpRuntime.from_environment()
    try:
        yield built
    finally:
        built.close()


def http_event(method: str, path: str, body: str = "", cookies: list[str] | None = None) -> dict[str, Any]:
    """A recorded API Gateway event, re-aimed at a UI path, without the MCP credential."""
    event = copy.deepcopy(load_event("http/get-mcp"))
    event["headers"].pop("authorization")
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["routeKey"] = event["requestContext"]["routeKey"] = f"{method} {path}"
    event["headers"]["accept"] = "text/html"
    if body:
        event["body"] = body
        event["headers"]["content-type"] = "application/x-www-form-urlencoded"
        event["headers"]["content-length"] = str(len(body))
    if cookies:
        event["cookies"] = cookies
    return event


def test_ui_is_off_by_default(env: None) -> None:
    with runtime() as rt:
        result = rt.handle(http_event("GET", "/ui/login"), FakeLambdaContext())
        assert result["statusCode"] == 401


def test_ui_signs_in_with_an_api_key_and_keeps_the_session_in_a_cookie(
    env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REARVIEW_UI", "true")
    monkeypatch.setenv("REARVIEW_UI_SECRET", "lambda-shared-ui-secret-0123456789")
    with runtime() as rt:
        context = FakeLambdaContext()
        login = rt.handle(http_event("GET", "/ui/login"), context)
        assert login["statusCode"] == 200 and 'id="api_key"' in login["body"]
        assert login["headers"]["content-security-policy"] == CSP
        signed = rt.handle(http_event("POST", "/ui/login", urlencode({"api_key": TENANT_B_KEY})), context)
        assert signed["statusCode"] == 303, signed
        (cookie,) = signed["cookies"]
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert TENANT_B_KEY not in cookie
        page = rt.handle(http_event("GET", "/ui/memories", cookies=[cookie.split(";")[0]]), context)
        assert page["statusCode"] == 200 and "Tenant <strong>tenant-b</strong>" in page["body"]
        assert rt.handle(http_event("GET", "/ui/memories"), context)["statusCode"] == 303
        assert (
            rt.handle(http_event("POST", "/mcp", cookies=[cookie.split(";")[0]]), context)["statusCode"]
            == 401
        )

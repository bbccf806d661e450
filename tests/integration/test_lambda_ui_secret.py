"""The memory browser's session secret on Lambda, as template.yaml deploys it (MemoryBrowser=Enabled).

HTTP API payload 2.0 events in (cookies in the `cookies` array, form bodies base64-encoded as
API Gateway sends them), proxy results out (`Set-Cookie` in `cookies`). The session secret is a
moto Secrets Manager secret named by `REARVIEW_UI_SECRET_ARN`, as the template passes it.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest

from handlers.mcp import McpRuntime
from rearview.errors import ConfigurationError
from tests.events import TENANT_A_KEY, load_event
from tests.integration import test_lambda_handler
from tests.integration.test_lambda_handler import FakeLambdaContext

pytest_plugins = ["tests.fixtures.aws"]
lambda_env = test_lambda_handler.lambda_env  # the MCP function's environment (events/env.json, moto)

HOST = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
ORIGIN = f"https://{HOST}"


def ui_event(
    method: str,
    path: str,
    form: dict[str, str] | None = None,
    cookies: list[str] | None = None,
) -> dict[str, Any]:
    """An HTTP API event for a browser request to /ui (built from a recorded GET event)."""
    event = copy.deepcopy(load_event("http/get-mcp"))
    path, _, query = path.partition("?")
    route = "GET /ui" if (method, path) == ("GET", "/ui") else f"{method} /ui/{{proxy+}}"
    event.update(routeKey=route, rawPath=path, rawQueryString=query)
    event["requestContext"].update(routeKey=route)
    event["requestContext"]["http"].update(method=method, path=path)
    headers = event["headers"]
    for name in ("authorization", "mcp-protocol-version"):
        headers.pop(name)
    headers["accept"] = "text/html"
    if cookies:
        event["cookies"] = cookies
    if form is not None:
        body = urlencode(form).encode()
        headers.update(
            {
                "content-type": "application/x-www-form-urlencoded",
                "content-length": str(len(body)),
                "origin": ORIGIN,
            }
        )
        event.update(body=base64.b64encode(body).decode(), isBase64Encoded=True)
    return event


@pytest.fixture
def ui_secret_arn(lambda_env: None) -> str:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    value = client.get_random_password(PasswordLength=64, ExcludePunctuation=True)["RandomPassword"]
    arn: str = client.create_secret(Name="rearview-ui-session", SecretString=value)["ARN"]
    return arn


@pytest.fixture
def ui_runtime(monkeypatch: pytest.MonkeyPatch, ui_secret_arn: str) -> Iterator[McpRuntime]:
    monkeypatch.setenv("REARVIEW_UI", "true")
    monkeypatch.setenv("REARVIEW_UI_SECRET_ARN", ui_secret_arn)
    built = McpRuntime.from_environment()
    try:
        yield built
    finally:
        built.close()


def test_sign_in_and_browse_through_the_http_api(ui_runtime: McpRuntime) -> None:
    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        return ui_runtime.handle(event, FakeLambdaContext())

    page = invoke(ui_event("GET", "/ui/login"))
    assert page["statusCode"] == 200
    assert page["headers"]["content-type"].startswith("text/html")
    assert "script-src 'self'" in page["headers"]["content-security-policy"]
    assert 'id="login"' in page["body"]

    assert invoke(ui_event("GET", "/ui/memories"))["statusCode"] == 303  # to the login form

    refused = invoke(ui_event("POST", "/ui/login", form={"api_key": "wrong"}))
    assert refused["statusCode"] == 401 and not refused.get("cookies")

    signed_in = invoke(ui_event("POST", "/ui/login", form={"api_key": TENANT_A_KEY}))
    assert signed_in["statusCode"] == 303
    (cookie,) = signed_in["cookies"]
    attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "secure", "path=/ui", "samesite=strict"} <= attributes
    assert TENANT_A_KEY not in cookie
    pair = cookie.split(";", 1)[0]

    browse = invoke(ui_event("GET", "/ui/memories", cookies=[pair]))
    assert browse["statusCode"] == 200, browse
    assert 'id="memories"' in browse["body"] or 'id="counts"' in browse["body"]


def test_a_session_signed_by_one_instance_is_accepted_by_another(
    monkeypatch: pytest.MonkeyPatch, ui_secret_arn: str
) -> None:
    """Every instance reads the same secret: a session survives a cold start or another instance."""
    monkeypatch.setenv("REARVIEW_UI", "true")
    monkeypatch.setenv("REARVIEW_UI_SECRET_ARN", ui_secret_arn)
    first, second = McpRuntime.from_environment(), McpRuntime.from_environment()
    try:
        signed_in = first.handle(
            ui_event("POST", "/ui/login", form={"api_key": TENANT_A_KEY}), FakeLambdaContext()
        )
        pair = signed_in["cookies"][0].split(";", 1)[0]
        browse = second.handle(ui_event("GET", "/ui/memories", cookies=[pair]), FakeLambdaContext())
        assert browse["statusCode"] == 200
    finally:
        first.close()
        second.close()


def test_enabled_without_a_session_secret_fails_init(
    lambda_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REARVIEW_UI", "true")
    monkeypatch.setenv("REARVIEW_UI_SECRET_ARN", "")  # what the template sets when disabled
    with pytest.raises(ConfigurationError, match="REARVIEW_UI_SECRET_ARN"):
        McpRuntime.from_environment()

"""The built MCP function behind the HTTP API, as an MCP client sees it (both protocol eras)."""

from __future__ import annotations

import time
import uuid

import httpx2
import pytest

from tests.deployed.conftest import TENANT_A_KEY, TENANT_B_KEY, Deployment
from tests.mcp_client import MODES, blocking_client

pytestmark = [pytest.mark.deployed, pytest.mark.opensearch, pytest.mark.slow]


def test_without_a_key_or_with_a_wrong_one_every_call_is_401(deployment: Deployment) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
    for auth in ({}, {"authorization": "Bearer rv-not-a-key"}):
        response = httpx2.post(deployment.mcp_url, json=body, headers={**headers, **auth}, timeout=60)
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"].lower().startswith("bearer")
    sent = deployment.http_api.events[-1]
    assert sent["version"] == "2.0" and sent["routeKey"] == "POST /mcp"
    assert sent["requestContext"]["http"]["method"] == "POST"


def test_routes_come_from_the_template(deployment: Deployment) -> None:
    assert (
        httpx2.get(deployment.mcp_url, headers={"authorization": f"Bearer {TENANT_A_KEY}"}).status_code == 405
    )
    assert httpx2.get(f"{deployment.http_api.url}/healthz").status_code == 200
    missing = httpx2.get(f"{deployment.http_api.url}/ui/")  # MemoryBrowser=Disabled: no such route
    assert missing.status_code == 404 and missing.json() == {"message": "Not Found"}


@pytest.mark.parametrize("mode", MODES)
def test_a_memory_written_through_the_function_is_found_through_it(deployment: Deployment, mode: str) -> None:
    marker = uuid.uuid4().hex[:10]
    content = f"The deploy freeze for project {marker} starts on Thursdays at noon."
    with blocking_client(deployment.mcp_url, mode, TENANT_A_KEY) as client:
        assert {t.name for t in client.tools()} >= {"memory_write", "memory_search", "memory_get"}
        written = client.call("memory_write", {"content": content, "tags": ["deployed-tier"]})
        assert written["action"] == "created"
        memory_id = written["id"]
        assert client.call("memory_get", {"memory_id": memory_id})["content"] == content
        deadline = time.monotonic() + 15  # the index refreshes within about a second
        found: list[str] = []
        while time.monotonic() < deadline and memory_id not in found:
            found = [
                hit["id"]
                for hit in client.call("memory_search", {"query": f"deploy freeze {marker}"})["results"]
            ]
        assert memory_id in found
    with blocking_client(deployment.mcp_url, mode, TENANT_B_KEY) as other:
        hits = other.call("memory_search", {"query": f"deploy freeze {marker}"})["results"]
        assert memory_id not in [hit["id"] for hit in hits]
        assert "not found" in other.error("memory_get", {"memory_id": memory_id})
    item = deployment.dynamodb.get_item(
        TableName=deployment.table, Key={"pk": {"S": f"T#tenant-a#M#{memory_id}"}, "sk": {"S": "MEMORY"}}
    )["Item"]
    assert item["content"]["S"] == content  # in the table the template describes


def test_the_memory_browser_when_enabled_signs_in_with_an_api_key(deployment: Deployment) -> None:
    base = deployment.ui_http_api.url
    assert "GET /ui/{proxy+}" in deployment.ui_http_api.routes
    login = httpx2.get(f"{base}/ui/login", headers={"accept": "text/html"}, timeout=60)
    assert login.status_code == 200 and 'id="api_key"' in login.text
    signed = httpx2.post(
        f"{base}/ui/login", data={"api_key": TENANT_B_KEY}, headers={"accept": "text/html"}, timeout=60
    )
    assert signed.status_code == 303, signed.text
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "Secure" in cookie and TENANT_B_KEY not in cookie
    page = httpx2.get(f"{base}/ui/memories", headers={"accept": "text/html", "cookie": cookie.split(";")[0]})
    assert page.status_code == 200 and "Tenant <strong>tenant-b</strong>" in page.text
    assert deployment.ui_http_api.events[-1]["cookies"] == [cookie.split(";")[0]]  # payload 2.0 cookies

"""Request headers an attacker controls never flow into the 401 challenge or the resource metadata."""

from __future__ import annotations

import httpx
import pytest

HOSTILE = [
    pytest.param({"host": "evil.example"}, "evil.example", id="host"),
    pytest.param({"x-forwarded-proto": 'javascript"x'}, "javascript", id="forwarded-proto"),
]
REFUSED = {400, 403, 421}  # a server may also refuse an unknown Host outright
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.mark.parametrize(("headers", "marker"), HOSTILE)
def test_challenge_does_not_reflect_request_headers(
    keyed_url: str, headers: dict[str, str], marker: str
) -> None:
    response = httpx.post(keyed_url, json=LIST, headers=headers, timeout=10)
    assert response.status_code in {401, *REFUSED}
    assert marker not in response.headers.get("www-authenticate", "") + response.text


@pytest.mark.parametrize(("headers", "marker"), HOSTILE)
def test_resource_metadata_does_not_reflect_request_headers(
    keyed_url: str, headers: dict[str, str], marker: str
) -> None:
    metadata_url = keyed_url.replace("/mcp", "/.well-known/oauth-protected-resource")
    response = httpx.get(metadata_url, headers=headers, timeout=10)
    assert response.status_code in {200, *REFUSED} and marker not in response.text

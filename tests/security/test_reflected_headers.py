"""Request headers an attacker controls never flow into the 401 challenge or the resource metadata.

The API-key server (`keyed_url`) names no URL at all; the OAuth one names its metadata's URL.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import running_server

HOSTILE = [
    pytest.param({"host": "evil.example"}, "evil.example", id="host"),
    pytest.param({"x-forwarded-proto": 'javascript"x'}, "javascript", id="forwarded-proto"),
]
REFUSED = {400, 403, 421}  # a server may also refuse an unknown Host outright
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.fixture(scope="module")
def oauth_url(data_dir: Path) -> Iterator[str]:
    """A running server in OAuth mode (an authorization server is configured)."""
    config = data_dir.parent / "oauth.toml"
    config.write_text('[api_keys]\n"key-oauth" = "tenant-a"\n')
    with running_server(
        data_dir.parent / "oauth-data", config_file=config, authorization_server="https://auth.example.com/"
    ) as url:
        yield url


@pytest.fixture(params=["keyed_url", "oauth_url"])
def any_url(request: pytest.FixtureRequest) -> str:
    """Each auth mode's server in turn."""
    url: str = request.getfixturevalue(request.param)
    return url


@pytest.mark.parametrize(("headers", "marker"), HOSTILE)
def test_challenge_does_not_reflect_request_headers(
    any_url: str, headers: dict[str, str], marker: str
) -> None:
    response = httpx.post(any_url, json=LIST, headers=headers, timeout=10)
    assert response.status_code in {401, *REFUSED}
    assert marker not in response.headers.get("www-authenticate", "") + response.text


@pytest.mark.parametrize(("headers", "marker"), HOSTILE)
def test_resource_metadata_does_not_reflect_request_headers(
    oauth_url: str, headers: dict[str, str], marker: str
) -> None:
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        response = httpx.get(oauth_url.replace("/mcp", path), headers=headers, timeout=10)
        assert response.status_code in {200, *REFUSED} and marker not in response.text


def test_the_oauth_challenge_names_the_path_suffixed_metadata(oauth_url: str) -> None:
    challenge = httpx.post(oauth_url, json=LIST, timeout=10).headers["www-authenticate"]
    metadata_url = oauth_url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert challenge == f'Bearer realm="rearview", resource_metadata="{metadata_url}"'
    assert httpx.get(metadata_url, timeout=10).json()["authorization_servers"] == [
        "https://auth.example.com/"
    ]

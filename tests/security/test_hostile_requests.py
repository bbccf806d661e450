"""The Low items of issue 24: ambiguous credentials, unsendable keys, deep JSON, spoofable ids, hidden text.

- Two `Authorization` (or `X-API-Key`) headers: the last silently won; now the request is refused.
- A non-ASCII API key in `config.toml` signed in to the browser but never to `/mcp` (headers are
  latin-1): now it is refused when the file is read, naming the entry, never the key.
- JSON nested 1,000 deep was a 500 with a traceback; now 400 with the parse error (-32700).
- Bidi overrides and other invisible format characters were accepted in agent, session and tag
  ids (`admin\u202eten` shows as `adminnet`); now they are refused by name.
- Two invisible TAG characters made a visually identical memory pass exact dedup: the dedup hash
  (`text.content_hash`) now ignores invisible format characters. (Content itself is refused or
  stripped of them at write by the `recall` branch, item 1; this is the hash, whatever reaches it.)

HTTP checks run against the real endpoint (`keyed_url`) with raw requests or the official client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rearview.config.settings import Settings
from rearview.errors import ConfigurationError
from rearview.text import content_hash
from tests.mcp_client import BlockingClient, blocking_client

MODE = "2026-07-28"
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


@pytest.fixture(scope="module")
def tenant_a(keyed_url: str) -> Iterator[BlockingClient]:
    with blocking_client(keyed_url, MODE, "key-tenant-a") as client:
        yield client


@pytest.mark.parametrize("header", ["authorization", "x-api-key"])
def test_two_credential_headers_are_refused(keyed_url: str, header: str) -> None:
    value = "Bearer key-tenant-a" if header == "authorization" else "key-tenant-a"
    other = "Bearer key-tenant-b" if header == "authorization" else "key-tenant-b"
    headers = [*MCP_HEADERS.items(), (header, value), (header, other)]
    response = httpx.post(keyed_url, content=LIST_TOOLS, headers=headers)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    single = httpx.post(keyed_url, content=LIST_TOOLS, headers=[*MCP_HEADERS.items(), (header, value)])
    assert single.status_code == 200


def test_a_non_ascii_api_key_is_refused_in_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[api_keys]\n"plain-key-1" = "alice"\n"clé-secrète" = "bob"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="entry 2 has characters outside printable ASCII") as caught:
        Settings.load(data_dir=tmp_path, config_file=config).api_keys()
    assert "clé" not in str(caught.value)


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_json_nested_deep_is_a_parse_error_not_a_500(keyed_url: str, depth: int) -> None:
    arguments = '{"content": "x", "metadata": ' + "[" * depth + "]" * depth + "}"
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_write", "arguments": '
    )
    headers = {**MCP_HEADERS, "authorization": "Bearer key-tenant-a"}
    response = httpx.post(keyed_url, content=body + arguments + "}}", headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("agent_id", "admin\u202eten"),  # RIGHT-TO-LEFT OVERRIDE
        ("session_id", "s\u2066-1\u2069"),  # isolates
        ("tags", ["ops\u200b"]),  # zero-width space
        ("tags", ["t\U000e0061\U000e0062"]),  # TAG characters
    ],
)
def test_invisible_formatting_is_refused_in_ids_and_tags(
    tenant_a: BlockingClient, field: str, value: object
) -> None:
    message = tenant_a.error("memory_write", {"content": "a note", field: value})
    assert "invalid_input" in message and f"`{field}" in message  # `tags.0` for a tag
    assert "invisible formatting characters" in message


def test_hidden_tag_characters_do_not_make_a_different_memory_for_exact_dedup() -> None:
    shown = "The user's API quota resets on Mondays"
    for hidden in ("\U000e0061\U000e0062", "\u200b", "\u202e\u202c", "\ufeff"):
        assert content_hash(shown[:9] + hidden + shown[9:]) == content_hash(shown)
    assert content_hash("The user's API quota resets on Tuesdays") != content_hash(shown)

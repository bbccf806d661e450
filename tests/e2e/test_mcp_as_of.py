"""As-of recall and verified memories through the official MCP client and the real endpoint (issue 47).

A fresh `rearview serve` (embedded SQLite store and index): a fact, its correction with `supersedes`,
then `memory_search(as_of=...)` between the two answers with the fact as it was believed then, and a
plain search with the correction. Bad `as_of` values are tool errors that name the field.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.server import running_server
from tests.mcp_client import BlockingClient, blocking_client

pytestmark = pytest.mark.slow

MODE = "2026-07-28"
OLD = "Priya's manager is Tomás Ortega."
NEW = "Priya's manager is now Hana Kobayashi."
QUERY = "who is Priya's manager"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    data_dir: Path = tmp_path_factory.mktemp("as-of")
    with running_server(data_dir) as url, blocking_client(url, MODE) as c:
        yield c


def _hits(client: BlockingClient, **args: object) -> list[str]:
    return [h["content"] for h in client.call("memory_search", {"query": QUERY, **args})["results"]]


def test_as_of_recalls_what_was_believed_before_a_correction(client: BlockingClient) -> None:
    old = client.call("memory_write", {"content": OLD})["id"]
    time.sleep(0.05)
    new = client.call("memory_write", {"content": NEW, "supersedes": old})["id"]
    corrected = datetime.fromisoformat(client.call("memory_get", {"memory_id": new})["created_at"])
    before = (corrected - timedelta(milliseconds=20)).isoformat()

    assert _hits(client, as_of=before) == [OLD]
    assert _hits(client) == [NEW]
    assert _hits(client, as_of=corrected.isoformat()) == [NEW]
    raw = client.raw("memory_search", {"query": QUERY, "as_of": before})
    assert "Tomás Ortega" in raw.content[0].text  # type: ignore[union-attr]

    verified = client.call("memory_update", {"memory_id": new, "verified": True})
    assert verified["verified_at"] is not None and verified["content"] == NEW
    block = client.raw("memory_search", {"query": QUERY}).content[0].text  # type: ignore[union-attr]
    assert f"verified {verified['verified_at'][:10]}" in block
    refused = client.error("memory_update", {"memory_id": old, "verified": True})
    assert "invalid `verified`" in refused and "superseded" in refused


@pytest.mark.parametrize(
    ("as_of", "says"),
    [
        ("last tuesday", "not an ISO-8601 timestamp"),
        ("2999-01-01T00:00:00Z", "is in the future"),
        ("2001-01-01T00:00:00Z", "the earliest allowed is"),
    ],
)
def test_a_bad_as_of_is_an_error_naming_the_field(client: BlockingClient, as_of: str, says: str) -> None:
    message = client.error("memory_search", {"query": QUERY, "as_of": as_of})
    assert "invalid_input" in message and "invalid `as_of`" in message and says in message, message

"""The learned relevance through the official client, on the local default (`rearview serve`: ONNX e5).

Issue 31: a hit's relevance is a calibrated probability; likely answers are marked `relevant`, weak
matches are labelled as such in the context block, and `why` reproduces the score exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from rearview.service.search.rendering import WEAK_RULE
from tests.e2e.server import running_server
from tests.mcp_client import BlockingClient, blocking_client

pytestmark = pytest.mark.slow

MODE = "2026-07-28"
NOTES = {
    "pnpm": "The user uses pnpm as the package manager for JavaScript projects.",
    "cat": "The user's cat is called Mochi; she is a ginger tabby.",
    "peanuts": "The user is allergic to peanuts.",
    "deploy": "No deploys to production after 14:00 on Fridays.",
    "manager": "用户的直属领导是王经理。",
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    data_dir: Path = tmp_path_factory.mktemp("relevance")
    with running_server(data_dir, embedder="onnx") as url, blocking_client(url, MODE) as c:
        yield c


@pytest.fixture(scope="module")
def ids(client: BlockingClient) -> dict[str, str]:
    return {key: client.call("memory_write", {"content": text})["id"] for key, text in NOTES.items()}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("package manager", "pnpm"),
        ("Which package manager does the user use?", "pnpm"),
        ("peanut allergy", "peanuts"),
    ],
)
def test_a_plain_answer_comes_first_marked_relevant(
    client: BlockingClient, ids: dict[str, str], query: str, expected: str
) -> None:
    hits = client.call("memory_search", {"query": query})["results"]
    assert hits and hits[0]["id"] == ids[expected], hits
    assert hits[0]["relevant"] and hits[0]["relevance"] >= 0.5
    assert all(not h["relevant"] for h in hits[1:])  # nothing else here answers it


def test_a_question_about_nothing_stored_is_not_passed_off_as_answered(
    client: BlockingClient, ids: dict[str, str]
) -> None:
    for query in ("What is the capital of Peru?", "How many moons does Jupiter have?"):
        raw = client.raw("memory_search", {"query": query})
        assert raw.structured_content is not None
        hits = raw.structured_content["results"]
        assert not any(h["relevant"] for h in hits), hits
        text = raw.content[0].text  # type: ignore[union-attr]
        assert "(no relevant memories)" in text or WEAK_RULE in text


def test_why_reproduces_the_score(client: BlockingClient, ids: dict[str, str]) -> None:
    hits = client.call(
        "memory_search", {"query": "Can I ship to production on Friday afternoon?", "explain": True}
    )["results"]
    assert hits and hits[0]["id"] == ids["deploy"]
    for hit in hits:
        why = hit["why"]
        product = math.prod(
            why[k]
            for k in ("relevance", "importance", "recency", "strength", "subject", "temporal", "consolidated")
        )
        assert product == pytest.approx(hit["score"], abs=1e-5)
        assert why["relevance"] == hit["relevance"]

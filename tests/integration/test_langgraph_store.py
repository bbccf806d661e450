"""`RearviewStore` (LangGraph's `BaseStore` on Rearview), embedded and against a server (hashing embedder).

langgraph ships no store conformance suite, so these are the behaviours of its own `InMemoryStore`
tests that hold for a memory (put/get/update/delete, search by prefix with filter, limit and
offset, list_namespaces with prefix/suffix/max_depth), and the differences the adapter documents.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from rearview import Memory
from rearview.config.settings import Settings
from rearview.errors import InvalidInputError
from rearview.integrations.langgraph import RearviewStore
from rearview.integrations.langgraph_items import item_tag
from tests.e2e.server import running_server


@pytest.fixture(params=["embedded", "served"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A `Memory` on an embedded store, or one against a Rearview server: the store behaves alike."""
    if request.param == "embedded":
        with Memory(settings=Settings.load(data_dir=tmp_path, embedder="hashing")) as memory:
            yield memory
        return
    with running_server(tmp_path) as url, Memory(url=url) as memory:
        yield memory


@pytest.fixture
def store(memory: Memory) -> RearviewStore:
    return RearviewStore(memory)


def test_put_get_update_delete(store: RearviewStore) -> None:
    ns = ("users", "alice")
    assert store.get(ns, "diet") is None
    store.put(ns, "diet", {"content": "Alice is vegetarian", "since": 2019})
    item = store.get(ns, "diet")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        ns,
        "diet",
        {"content": "Alice is vegetarian", "since": 2019},
    )
    assert item.created_at == item.updated_at

    store.put(ns, "diet", {"content": "Alice became vegan in March", "since": 2024})
    updated = store.get(ns, "diet")
    assert updated is not None and updated.value == {"content": "Alice became vegan in March", "since": 2024}
    assert updated.created_at == item.created_at < updated.updated_at

    store.delete(ns, "diet")
    assert store.get(ns, "diet") is None
    store.put(ns, "diet", {"content": "Alice eats fish again"})  # a deleted key can be put again
    again = store.get(ns, "diet")
    assert again is not None and again.value == {"content": "Alice eats fish again"}
    store.put(ns, "diet", None)  # a put of None deletes
    assert store.get(ns, "diet") is None


def test_a_put_of_an_existing_key_is_a_new_version_of_the_same_memory(
    store: RearviewStore, memory: Memory
) -> None:
    store.put(("users", "alice"), "city", {"content": "Alice lives in Lisbon"})
    store.put(("users", "alice"), "city", {"content": "Alice moved to Porto in 2025"})
    [listed] = memory.browse(tags=["lg-ns:users/alice"]).items
    assert listed.content == "Alice moved to Porto in 2025" and listed.version == 2
    assert [e.action for e in memory.history(listed.id).events] == ["created", "updated"]


def test_values_without_a_text_field_round_trip_as_json(store: RearviewStore) -> None:
    value = {"name": "Alice", "age": 31, "tags": ["a", "b"], "nested": {"x": 1.5, "y": None}}
    store.put(("profiles",), "alice", value)
    item = store.get(("profiles",), "alice")
    assert item is not None and item.value == value


def test_the_same_key_in_other_namespaces_is_another_item(store: RearviewStore) -> None:
    store.put(("a",), "k", {"content": "The build uses Bazel"})
    store.put(("a", "b"), "k", {"content": "The deploy runs on Fridays"})
    assert store.get(("a",), "k").value == {"content": "The build uses Bazel"}  # type: ignore[union-attr]
    assert store.get(("a", "b"), "k").value == {"content": "The deploy runs on Fridays"}  # type: ignore[union-attr]
    assert store.get(("b",), "k") is None


def test_equal_text_under_two_keys_is_one_memory_with_two_keys(store: RearviewStore, memory: Memory) -> None:
    store.put(("users", "alice"), "one", {"content": "Alice prefers pnpm over npm", "n": 1})
    store.put(("users", "bob"), "two", {"content": "Alice prefers pnpm over npm", "n": 2})
    assert len(memory.browse(tags=["langgraph"]).items) == 1  # merged: Rearview keeps one memory
    assert store.get(("users", "alice"), "one").value["n"] == 1  # type: ignore[union-attr]
    assert store.get(("users", "bob"), "two").value["n"] == 2  # type: ignore[union-attr]
    assert store.list_namespaces() == [("users", "alice"), ("users", "bob")]

    store.put(
        ("users", "bob"), "two", {"content": "Bob prefers yarn", "n": 2}
    )  # detaches into its own memory
    assert store.get(("users", "alice"), "one").value["content"] == "Alice prefers pnpm over npm"  # type: ignore[union-attr]
    assert store.get(("users", "bob"), "two").value["content"] == "Bob prefers yarn"  # type: ignore[union-attr]

    store.put(("users", "carol"), "three", {"content": "Alice prefers pnpm over npm"})
    store.delete(("users", "alice"), "one")  # the memory stays for its other key
    assert store.get(("users", "alice"), "one") is None
    assert store.get(("users", "carol"), "three") is not None
    assert ("users", "alice") not in store.list_namespaces()
    store.delete(("users", "carol"), "three")
    assert [m.content for m in memory.browse(tags=["langgraph"]).items] == ["Bob prefers yarn"]


def test_search_without_a_query_lists_the_prefix_newest_first(store: RearviewStore) -> None:
    for n in range(5):
        store.put(("docs", "team"), f"d{n}", {"content": f"Runbook number {n}", "n": n})
    store.put(("docs",), "top", {"content": "The wiki moved to Notion", "n": 9})
    store.put(("other",), "x", {"content": "Unrelated note", "n": 9})

    everything = store.search(("docs",), limit=10)
    assert [i.key for i in everything] == ["top", "d4", "d3", "d2", "d1", "d0"]
    assert all(i.score is None for i in everything)
    assert [i.key for i in store.search(("docs", "team"), limit=2)] == ["d4", "d3"]
    assert [i.key for i in store.search(("docs", "team"), limit=2, offset=2)] == ["d2", "d1"]
    assert [i.key for i in store.search(("docs", "team"), limit=2, offset=4)] == ["d0"]
    assert len(store.search((), limit=100)) == 7


def test_search_filters_on_value_fields(store: RearviewStore) -> None:
    store.put(("items",), "a", {"content": "Red apple", "color": "red", "price": 1.0, "meta": {"k": 1}})
    store.put(("items",), "b", {"content": "Green pear", "color": "green", "price": 2.5, "meta": {"k": 2}})
    store.put(("items",), "c", {"content": "Red cherry", "color": "red", "price": 4.0, "meta": {"k": 1}})

    def keys(**kwargs: object) -> list[str]:
        return sorted(i.key for i in store.search(("items",), **kwargs))  # type: ignore[arg-type]

    assert keys(filter={"color": "red"}) == ["a", "c"]
    assert keys(filter={"price": {"$gt": 2.0}}) == ["b", "c"]
    assert keys(filter={"price": {"$gte": 1.0, "$lt": 4.0}}) == ["a", "b"]
    assert keys(filter={"color": {"$ne": "red"}}) == ["b"]
    assert keys(filter={"meta": {"k": 1}}) == ["a", "c"]
    assert keys(filter={"color": "red", "price": {"$lte": 1.0}}) == ["a"]
    assert keys(filter={"missing": "x"}) == []
    assert keys(query="red fruit", filter={"color": "red"}) == ["a", "c"]


def test_search_with_a_query_is_hybrid_recall_best_first(store: RearviewStore) -> None:
    store.put(("users", "alice"), "tool", {"content": "Alice prefers pnpm over npm for JavaScript projects"})
    store.put(("users", "alice"), "food", {"content": "Alice is allergic to peanuts"})
    store.put(("users", "bob"), "tool", {"content": "Bob prefers pnpm as well"})
    hits = store.search(("users", "alice"), query="which package manager does Alice prefer, pnpm or npm?")
    assert hits and hits[0].key == "tool" and hits[0].namespace == ("users", "alice")
    assert hits[0].score is not None and hits[0].score > 0
    assert all(h.namespace == ("users", "alice") for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # type: ignore[type-var]
    assert len(store.search(("users",), query="pnpm", limit=1)) == 1


def test_fields_a_put_indexes_are_the_memorys_recall_cues(store: RearviewStore, memory: Memory) -> None:
    ns = ("users", "alice")
    value = {"content": "Alice is vegetarian", "asks": ["what does Alice eat?", "Alice régime"], "n": 1}
    store.put(ns, "diet", value, index=["content", "asks"])
    item = store.get(ns, "diet")
    assert item is not None and item.value == value  # the cue fields stay in the value
    [held] = memory.browse(tags=["lg-ns:users/alice"]).items
    assert [c.text for c in held.cues] == ["what does Alice eat?", "Alice régime"]

    store.put(ns, "diet", {**value, "n": 2})  # no index: the cues stay
    [held] = memory.browse(tags=["lg-ns:users/alice"]).items
    assert held.version == 2 and [c.text for c in held.cues] == ["what does Alice eat?", "Alice régime"]
    store.put(ns, "diet", {"content": "Alice is vegan", "q": "is Alice vegan?"}, index=["q", "missing"])
    [held] = memory.browse(tags=["lg-ns:users/alice"]).items
    assert [c.text for c in held.cues] == ["is Alice vegan?"]
    store.put(ns, "diet", {"content": "Alice is vegan"}, index=["q"])  # names fields: replaced, by none
    [held] = memory.browse(tags=["lg-ns:users/alice"]).items
    assert held.cues == []

    by_default = RearviewStore(memory, cue_fields=["question"])
    by_default.put(("faq",), "tea", {"text": "The office has green tea", "question": "is there tea?"})
    [faq] = memory.browse(tags=["lg-ns:faq"]).items
    assert [c.text for c in faq.cues] == ["is there tea?"]
    with pytest.raises(InvalidInputError) as many:
        store.put(
            ns, "many", {"content": "Alice has six cats", "q": [f"cat {i}" for i in range(6)]}, index=["q"]
        )
    assert many.value.field == "cues"


def test_a_search_may_give_other_phrasings_of_its_query(store: RearviewStore) -> None:
    store.put(("users", "alice"), "food", {"content": "Alice is allergic to peanuts"})
    store.put(("users", "alice"), "tool", {"content": "Alice prefers pnpm over npm"})
    assert store.search(("users",), query="Erdnüsse?") == []  # another language: nothing alone
    hits = store.search(("users",), query="Erdnüsse?", alternatives=["allergic to peanuts"])
    assert [h.key for h in hits] == ["food"]
    found = asyncio.run(store.asearch(("users",), query="cacahuètes", alternatives=["peanuts"]))
    assert [h.key for h in found] == ["food"]
    with pytest.raises(InvalidInputError) as bad:
        store.search(("users",), query="tea", alternatives=["a", "b", "c", "d"])
    assert bad.value.field == "alternatives"
    with pytest.raises(InvalidInputError, match="give a query too"):
        store.search(("users",), alternatives=["peanuts"])


def test_list_namespaces_with_prefix_suffix_depth_limit_offset(store: RearviewStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
               ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"), ("admin", "users", "789")]:  # fmt: skip
        store.put(ns, "k", {"content": f"Note filed under {'/'.join(ns)}"})

    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("users",)) == [("users", "123"), ("users", "456", "settings")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    every = store.list_namespaces()
    assert len(every) == 9 and every == sorted(every)
    assert store.list_namespaces(limit=3) == every[:3]
    assert store.list_namespaces(limit=3, offset=3) == every[3:6]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]


def test_batch_runs_in_order_and_abatch_on_a_thread(store: RearviewStore) -> None:
    ns = ("batch",)
    results = store.batch(
        [
            PutOp(ns, "k", {"content": "Standup is at 9:30"}),
            GetOp(ns, "k"),
            SearchOp(ns),
            PutOp(ns, "k", None),
            GetOp(ns, "k"),
        ]
    )
    assert results[0] is None and results[1].value == {"content": "Standup is at 9:30"}  # type: ignore[union-attr]
    assert [i.key for i in results[2]] == ["k"]  # type: ignore[union-attr]
    assert results[4] is None

    async def roundtrip() -> object:
        await store.aput(ns, "a", {"content": "Retro is on Fridays"})
        item = await store.aget(ns, "a")
        assert item is not None
        return item.value

    assert asyncio.run(roundtrip()) == {"content": "Retro is on Fridays"}


def test_namespaces_langgraph_refuses_are_refused(store: RearviewStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph",), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("",), "k")])


def test_ttl_minutes_become_the_memory_lifetime(store: RearviewStore, memory: Memory) -> None:
    store.put(("tmp",), "k", {"content": "The staging password rotates weekly"}, ttl=60 * 24 * 2)
    [listed] = memory.browse(tags=["lg-ns:tmp"]).items
    assert listed.expires_at is not None
    assert 1.9 < (listed.expires_at - listed.created_at).total_seconds() / 86400 < 2.1


def test_a_graph_reads_and_writes_the_store(store: RearviewStore) -> None:
    from langgraph.graph import START, StateGraph
    from langgraph.store.base import BaseStore
    from typing_extensions import TypedDict

    class State(TypedDict):
        user: str
        fact: str
        recalled: list[str]

    def remember(state: State, *, store: BaseStore) -> dict[str, object]:
        store.put(("users", state["user"]), "fact", {"content": state["fact"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict[str, object]:
        hits = store.search(("users", state["user"]), query="does Alice live in Lisbon?")
        return {"recalled": [h.value["content"] for h in hits]}

    graph = (
        StateGraph(State).add_node(remember).add_node(recall)
        .add_edge(START, "remember").add_edge("remember", "recall").compile(store=store)
    )  # fmt: skip
    out = graph.invoke({"user": "alice", "fact": "Alice lives in Lisbon", "recalled": []})
    assert out["recalled"] == ["Alice lives in Lisbon"]


def test_the_example_runs_and_is_the_docs_page_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import io
    import textwrap

    import rearview.integrations.langgraph as module

    code = textwrap.dedent((module.__doc__ or "").split("Example (docs/integrations.md's)::", 1)[1]).strip()
    page = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    assert f"```python\n{code}\n```" in page
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<example>", "exec"), {})
    assert out.getvalue().splitlines() == [
        "{'content': 'Alice is vegetarian'}",
        "diet",
        "Alice is vegetarian",
    ]


@pytest.fixture(params=["embedded", "served-bound-keys"])
def alice_and_mallory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    """Two agents of one tenant: named on an embedded store, or by their bound keys on a server."""
    if request.param == "embedded":
        settings = Settings.load(data_dir=tmp_path, embedder="hashing")
        with (
            Memory(settings=settings, agent_id="alice") as alice,
            Memory(settings=settings, agent_id="mallory") as mallory,
        ):
            yield alice, mallory
        return
    config = tmp_path / "rearview.toml"
    config.write_text(
        '[api_keys]\n"key-a" = { tenant = "t", agent = "alice" }\n"key-m" = { tenant = "t", agent = "mallory" }\n'
    )
    with (
        running_server(tmp_path / "data", config_file=config) as url,
        Memory(url=url, api_key="key-a") as alice,
        Memory(url=url, api_key="key-m") as mallory,
    ):
        yield alice, mallory


def test_an_item_is_its_agents_a_forged_tag_shadows_nothing(alice_and_mallory: tuple[Memory, Memory]) -> None:
    """Issue 45.5: another agent's plain write with an item's tag is not that item (items carry their writer)."""
    alice, mallory = alice_and_mallory
    ns, tag = ("users", "alice"), item_tag(("users", "alice"), "diet")
    record = json.dumps({"ns": list(ns), "key": "diet", "f": "content", "v": {}})
    forged = mallory.write(
        "Alice eats steak every day", tags=[tag, "langgraph", "lg-ns:users", "lg-ns:users/alice"],
        metadata={tag: record},
    )  # fmt: skip
    store = RearviewStore(alice)
    assert store.get(ns, "diet") is None
    store.put(ns, "diet", {"content": "Alice is vegetarian"})  # her own item: stored, not refused

    item = store.get(ns, "diet")
    assert item is not None and item.value == {"content": "Alice is vegetarian"}
    assert [i.value for i in store.search(("users",))] == [{"content": "Alice is vegetarian"}]
    found = store.search(("users",), query="what does Alice eat every day")
    assert [i.value for i in found] == [{"content": "Alice is vegetarian"}]
    assert store.list_namespaces() == [ns]
    store.delete(ns, "diet")
    assert store.get(ns, "diet") is None
    assert mallory.get(forged.id).content == "Alice eats steak every day"  # hers, untouched


def test_an_equal_put_by_another_agent_is_its_own_item(alice_and_mallory: tuple[Memory, Memory]) -> None:
    """Issue 45.5: equal text under one key from two agents is two items, each changed only by its writer."""
    alice, mallory = alice_and_mallory
    ours, theirs = RearviewStore(alice), RearviewStore(mallory)
    ns = ("team",)
    ours.put(ns, "freeze", {"content": "The release freeze starts on December 15"})
    theirs.put(ns, "freeze", {"content": "The release freeze starts on December 15"})  # not refused
    theirs.put(ns, "freeze", {"content": "The release freeze starts on January 30"})
    assert ours.get(ns, "freeze").value == {"content": "The release freeze starts on December 15"}  # type: ignore[union-attr]
    assert theirs.get(ns, "freeze").value == {"content": "The release freeze starts on January 30"}  # type: ignore[union-attr]
    theirs.delete(ns, "freeze")
    assert theirs.get(ns, "freeze") is None
    assert ours.get(ns, "freeze").value == {"content": "The release freeze starts on December 15"}  # type: ignore[union-attr]

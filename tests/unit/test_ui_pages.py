"""The memory browser's pages over a real service: what they show, what they change, and to whom.

Content is untrusted: it must come back escaped and intact. A tenant or agent that may not see
a memory gets the same 404 as for an unknown id, for reading and for every change.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from markupsafe import escape
from starlette.testclient import TestClient
from starlette.types import ASGIApp

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.backends.memory import InMemoryArchive, InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.config.settings import hash_key
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import NotFoundError
from rearview.models import (
    SERVICE_CUE_AUTHOR,
    Cue,
    HistoryAction,
    HistoryEvent,
    MemoryStatus,
    MemoryType,
    SearchRequest,
    Visibility,
    WriteRequest,
)
from rearview.service.lifecycle import LifecycleConfig, LifecycleService
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from rearview.shared.principal import Principal
from rearview.text import format_chars, strip_format_chars
from rearview.ui.views import linked_ids, timeline
from tests.factories import T0, created, make_memory

SECRET = "a-test-secret-of-enough-length-0123"
KEYS = {
    "key-alice": Principal("alice"),
    "key-bob": Principal("bob"),
    "key-x": Principal("alice", "agent-x"),
    "key-y": Principal("alice", "agent-y"),
}
HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)",
    "مرحبا بالعالم \u202eevil.exe\u202c — שלום עולם",
    "用户喜欢喝绿茶，不喜欢咖啡。",
    "{{ 7*7 }} {% raw %} &amp; &lt;",
]


@pytest.fixture
def app(service: MemoryService) -> ASGIApp:
    resolver = ApiKeyResolver({hash_key(k): p for k, p in KEYS.items()}, None)
    return create_app(service, resolver, host="0.0.0.0", ui=True, ui_secret=SECRET)


def session(app: ASGIApp, key: str) -> TestClient:
    client = TestClient(app)
    assert client.post("/ui/login", data={"api_key": key}, follow_redirects=False).status_code == 303
    return client


def token(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match
    return match.group(1)


def post(client: TestClient, memory_id: str, action: str, **fields: str) -> Any:
    page = client.get(f"/ui/memories/{memory_id}")
    data = {"csrf_token": token(page.text), **fields}
    return client.post(f"/ui/memories/{memory_id}/{action}", data=data, follow_redirects=False)


def ids_on(html: str, element: str = "tr") -> list[str]:
    return re.findall(rf'<{element} data-memory-id="([^"]+)"', html)


@pytest.mark.parametrize("content", HOSTILE)
def test_hostile_content_is_escaped_and_intact_everywhere(
    app: ASGIApp, service: MemoryService, content: str
) -> None:
    visible = "".join(c for c in content[:20] if c not in format_chars(content))  # ids refuse them
    memory = service.write("alice", WriteRequest(content=content, tags=[visible])).memory
    client = session(app, "key-alice")
    expected = str(escape(strip_format_chars(content)))  # stored without invisible format characters
    page = client.get(f"/ui/memories/{memory.id}").text
    assert f'<div id="content" class="content" dir="auto">{expected}</div>' in page
    assert (
        f'<textarea id="edit-content" name="content" rows="5" maxlength="4000" dir="auto">{expected}</textarea>'
        in page
    )
    listing = client.get("/ui/memories").text
    found = client.get("/ui/search", params={"q": content}).text
    for html in (page, listing, found):
        assert "<script>alert" not in html and "<img src=x" not in html and "onmouseover='" not in html
        assert "<script" not in html
    assert expected[:20] in listing
    if any(c.isalpha() for c in content):  # a query of only symbols finds nothing
        assert memory.id in ids_on(found, 'li class="hit"')


def test_another_tenants_memory_is_404_for_reading_and_every_change(
    app: ASGIApp, service: MemoryService
) -> None:
    memory = service.write("alice", WriteRequest(content="Alice's secret plan")).memory
    bob = session(app, "key-bob")
    assert bob.get(f"/ui/memories/{memory.id}").status_code == 404
    assert bob.get("/ui/memories/no-such-id").status_code == 404
    own = bob.get("/ui/memories")
    tok = token(own.text)
    for action, data in (
        ("edit", {"content": "pwned"}), ("forget", {"mode": "soft"}),
        ("forget", {"mode": "hard", "confirm": memory.id}), ("restore", {}),
    ):  # fmt: skip
        response = bob.post(f"/ui/memories/{memory.id}/{action}", data={"csrf_token": tok, **data})
        assert response.status_code == 404, action
        assert "Alice" not in response.text
    assert memory.id not in own.text
    assert memory.id not in bob.get("/ui/search", params={"q": "secret plan"}).text
    after = service.get("alice", memory.id)
    assert (after.content, after.status, after.version) == ("Alice's secret plan", MemoryStatus.ACTIVE, 1)


def test_private_memories_stay_with_their_agent(app: ASGIApp, service: MemoryService) -> None:
    private = service.write(
        "alice",
        WriteRequest(content="agent x private note", agent_id="agent-x", visibility=Visibility.PRIVATE),
    ).memory
    shared = service.write("alice", WriteRequest(content="shared team note", agent_id="agent-x")).memory
    x, y = session(app, "key-x"), session(app, "key-y")
    assert private.id in ids_on(x.get("/ui/memories").text)
    assert x.get(f"/ui/memories/{private.id}").status_code == 200
    listing = y.get("/ui/memories").text
    assert private.id not in ids_on(listing) and shared.id in ids_on(listing)
    assert y.get(f"/ui/memories/{private.id}").status_code == 404
    assert (
        y.get(f"/ui/memories/{private.id}", params={"agent_id": "agent-x"}).status_code == 404
    )  # bound: forced
    assert private.id not in y.get("/ui/search", params={"q": "private note", "agent_id": "agent-x"}).text
    assert post(y, shared.id, "edit").status_code in (303,)  # y may act on shared ones
    tok = token(listing)
    refused = y.post(f"/ui/memories/{private.id}/forget", data={"csrf_token": tok, "agent_id": "agent-x"})
    assert refused.status_code == 404
    assert service.get("alice", private.id, "agent-x").status is MemoryStatus.ACTIVE
    # An unbound key chooses whose view, like the tools' agent_id.
    alice = session(app, "key-alice")
    assert private.id not in ids_on(alice.get("/ui/memories").text)
    assert private.id in ids_on(alice.get("/ui/memories", params={"agent_id": "agent-x"}).text)


def test_a_bound_key_edits_and_forgets_only_its_agents_memories(app: ASGIApp, service: MemoryService) -> None:
    """Issue 32: the browser enforces authorship as the tools do (a bound key changes only its agent's)."""
    shared = service.write(
        "alice", WriteRequest(content="The on-call number is 0100", agent_id="agent-x")
    ).memory
    client = session(app, "key-y")
    edited = post(client, shared.id, "edit", content="The on-call number is 0199", version="1")
    assert edited.status_code == 403 and "written by agent `agent-x`" in edited.text
    forgotten = post(client, shared.id, "forget", mode="soft")
    assert forgotten.status_code == 403
    after = service.get("alice", shared.id, "agent-x")
    assert (after.content, after.version, after.status) == (shared.content, 1, MemoryStatus.ACTIVE)
    own = post(session(app, "key-x"), shared.id, "edit", content="The on-call number is 0101", version="1")
    assert own.status_code == 303


def test_a_bound_key_restores_only_its_agents_memories(app: ASGIApp, service: MemoryService) -> None:
    """Issue 45.8: a bound key may not undo another agent's forget through the browser either."""
    retracted = service.write(
        "alice", WriteRequest(content="The on-call number is 0100", agent_id="agent-x")
    ).memory
    assert post(session(app, "key-x"), retracted.id, "forget", mode="soft").status_code == 303
    refused = post(session(app, "key-y"), retracted.id, "restore")
    assert refused.status_code == 403 and "written by agent `agent-x`" in refused.text
    assert service.get("alice", retracted.id, "agent-x").status is MemoryStatus.DELETED
    assert post(session(app, "key-x"), retracted.id, "restore").status_code == 303


def test_edit_makes_a_version_shown_in_the_history(app: ASGIApp, service: MemoryService) -> None:
    memory = service.write("alice", WriteRequest(content="User prefers tea", tags=["drinks"])).memory
    client = session(app, "key-alice")
    response = post(
        client,
        memory.id,
        "edit",
        content="User prefers green tea",
        importance="4",
        tags="drinks, tea",
        version="1",
    )
    assert response.status_code == 303
    assert response.headers["location"] == f"/ui/memories/{memory.id}?done=edited"
    page = client.get(response.headers["location"]).text
    assert '<p role="status" id="flash">' in page
    after = service.get("alice", memory.id)
    assert (after.content, after.importance, after.tags, after.version) == (
        "User prefers green tea",
        4,
        ["drinks", "tea"],
        2,
    )
    history = page[page.index('id="history"') :]
    assert "updated" in history and "User prefers tea" in history and "User prefers green tea" in history
    assert [e.action.value for e in service.history("alice", memory.id).events] == ["created", "updated"]
    # Nothing changed: no new version. A stale form: 409, no change.
    assert (
        post(client, memory.id, "edit", content="User prefers green tea", importance="4", tags="drinks, tea")
        .headers["location"]
        .endswith("done=unchanged")
    )
    stale = post(client, memory.id, "edit", content="Stale", version="1")
    assert stale.status_code == 409 and '<p role="alert" class="error">' in stale.text
    bad = post(client, memory.id, "edit", importance="9")
    assert bad.status_code == 400 and "importance" in bad.text
    assert service.get("alice", memory.id).version == 2


def test_a_correction_and_what_it_superseded_link_to_each_other(app: ASGIApp, service: MemoryService) -> None:
    old = service.write("alice", WriteRequest(content="Deploys run on Fridays")).memory
    new = service.write("alice", WriteRequest(content="Deploys run on Tuesdays", supersedes=old.id)).memory
    client = session(app, "key-alice")
    successor = client.get(f"/ui/memories/{new.id}").text
    history = successor[successor.index('id="history"') :]
    assert f'supersedes <a href="/ui/memories/{old.id}">{old.id}</a>' in history
    retired = client.get(f"/ui/memories/{old.id}").text
    assert f'superseded by <a href="/ui/memories/{new.id}">{new.id}</a>' in retired
    created = service.history("alice", new.id).events[0]
    assert created.action.value == "created" and created.note == f"supersedes {old.id}"


def test_a_note_links_memory_ids_and_escapes_everything_else() -> None:
    memory_id = "01JABCDEFGHJKMNPQRSTVWXYZ0"
    html = linked_ids(f'<b>merged</b> into {memory_id} "now"', "?agent_id=a&b")
    assert html == (
        f'&lt;b&gt;merged&lt;/b&gt; into <a href="/ui/memories/{memory_id}?agent_id=a&amp;b">'
        f"{memory_id}</a> &#34;now&#34;"
    )
    assert linked_ids("no id in 01jabcdefghjkmnpqrstvwxyz0 or ILOU") == escape(
        "no id in 01jabcdefghjkmnpqrstvwxyz0 or ILOU"
    )


def test_soft_forget_then_restore(app: ASGIApp, service: MemoryService) -> None:
    memory = service.write("alice", WriteRequest(content="User prefers tea")).memory
    client = session(app, "key-alice")
    assert 'id="restore"' not in client.get(f"/ui/memories/{memory.id}").text
    assert post(client, memory.id, "forget", mode="soft").headers["location"].endswith("done=forgotten")
    assert service.get("alice", memory.id).status is MemoryStatus.DELETED
    page = client.get(f"/ui/memories/{memory.id}").text
    assert '<form id="restore" method="post"' in page and 'id="edit"' not in page
    assert post(client, memory.id, "restore").headers["location"].endswith("done=restored")
    restored = service.get("alice", memory.id)
    assert restored.status is MemoryStatus.ACTIVE and restored.content == "User prefers tea"
    actions = [e.action.value for e in service.history("alice", memory.id).events]
    assert actions == ["created", "forgotten", "restored"]
    assert memory.id in client.get("/ui/search", params={"q": "prefers tea"}).text  # indexed again
    again = post(client, memory.id, "restore")
    assert again.status_code == 400 and "only archived or soft-forgotten" in again.text


def test_verify_records_who_checked_it_without_a_new_content_version(
    app: ASGIApp, service: MemoryService, clock: ManualClock
) -> None:
    """Issue 47: the memory page's Verify button records `verified_at`/`verified_by` and a `verified` event."""
    memory = service.write("alice", WriteRequest(content="The VPN gateway is vpn1.example.com")).memory
    client = session(app, "key-alice")
    assert '<form id="verify" method="post"' in client.get(f"/ui/memories/{memory.id}").text
    clock.advance(days=2)
    response = post(client, memory.id, "verify")
    assert response.headers["location"] == f"/ui/memories/{memory.id}?done=verified"
    after = service.get("alice", memory.id)
    assert (after.verified_at, after.verified_by, after.content) == (clock.now(), "default", memory.content)
    page = client.get(response.headers["location"]).text
    assert "Verified." in page and f"{clock.now():%Y-%m-%d}" in page[page.index('id="metadata"') :]
    assert [e.action.value for e in service.history("alice", memory.id).events] == ["created", "verified"]
    post(client, memory.id, "forget", mode="soft")
    assert 'id="verify"' not in client.get(f"/ui/memories/{memory.id}").text
    refused = post(client, memory.id, "verify")
    assert refused.status_code == 400 and "verified" in refused.text


def test_hard_forget_needs_the_typed_id(app: ASGIApp, service: MemoryService) -> None:
    memory = service.write("alice", WriteRequest(content="User prefers tea")).memory
    client = session(app, "key-alice")
    for confirm in ("", "yes", memory.id.lower() + "x"):
        refused = post(client, memory.id, "forget", mode="hard", confirm=confirm)
        assert refused.status_code == 400 and "confirm" in refused.text
    assert service.get("alice", memory.id).status is MemoryStatus.ACTIVE
    assert post(client, memory.id, "forget", mode="bogus").status_code == 400
    done = post(client, memory.id, "forget", mode="hard", confirm=memory.id)
    assert done.status_code == 303 and done.headers["location"] == "/ui/memories?done=erased"
    with pytest.raises(NotFoundError):
        service.get("alice", memory.id)
    assert client.get(f"/ui/memories/{memory.id}").status_code == 404


def test_browse_pages_newest_first_and_never_exceeds_the_page(
    app: ASGIApp, service: MemoryService, clock: ManualClock
) -> None:
    written = []
    for i, word in enumerate(["apple", "banana", "cherry", "damson", "elder", "fig", "grape"]):
        clock.advance(minutes=1)
        kind = MemoryType.EPISODIC if i % 2 else MemoryType.SEMANTIC
        written.append(
            service.write("alice", WriteRequest(content=f"User grows {word} trees", type=kind)).memory.id
        )
    client = session(app, "key-alice")
    seen: list[str] = []
    url: str | None = "/ui/memories?limit=3"
    while url:
        page = client.get(url.replace("&amp;", "&")).text
        rows = ids_on(page)
        assert 1 <= len(rows) <= 3
        seen += rows
        match = re.search(r'<a rel="next" href="([^"]+)"', page)
        url = match.group(1) if match else None
    assert seen == list(reversed(written))
    semantic = ids_on(client.get("/ui/memories", params={"type": "episodic"}).text)
    assert semantic == [written[i] for i in (5, 3, 1)]
    counts = client.get("/ui/memories").text
    assert '<section id="counts"' in counts and "<td>episodic</td><td>3</td>" in counts
    assert client.get("/ui/memories?limit=101").status_code == 400
    assert client.get("/ui/memories?status=nonsense").status_code == 400
    assert client.get("/ui/memories?cursor=not-a-cursor").status_code == 400


def test_due_for_archival_lists_what_the_next_run_archives(
    app: ASGIApp, service: MemoryService, clock: ManualClock
) -> None:
    fading = service.write("alice", WriteRequest(content="User tried a trial plan", importance=1)).memory
    kept = service.write("alice", WriteRequest(content="User's name is Alice", importance=5)).memory
    clock.advance(days=6.97)  # importance 1 lives 7 days: it expires within the 1.5 h lookahead
    section = session(app, "key-alice").get("/ui/memories").text.split('id="due-archival"')[1]
    assert fading.id in section and "retention" in section and kept.id not in section


def test_search_explains_each_hit_and_does_not_reinforce(app: ASGIApp, service: MemoryService) -> None:
    memory = service.write("alice", WriteRequest(content="User prefers pnpm over npm", tags=["js"])).memory
    service.write("alice", WriteRequest(content="Deploys run on Fridays", type=MemoryType.EPISODIC))
    client = session(app, "key-alice")
    html = client.get("/ui/search", params={"q": "pnpm", "types": "semantic", "tags": "js"}).text
    assert '<form id="search" method="get"' in html and 'id="q"' in html
    assert ids_on(html, 'li class="hit"') == [memory.id]
    why = html[html.index('<details class="why">') :]
    for term in (
        "Keyword channel",
        "rank 1",
        "Vector channel",
        "Importance factor",
        "Recency factor",
        "Strength factor",
    ):
        assert term in why
    assert service.get("alice", memory.id).access_count == 0
    assert 'id="no-results"' in client.get("/ui/search", params={"q": "pnpm", "tags": "nope"}).text
    bad = client.get("/ui/search", params={"q": "pnpm", "types": "gossip", "since": "yesterday"})
    assert bad.status_code == 400 and "types" in bad.text


def test_memory_page_has_metadata_history_and_a_strength_chart(
    app: ASGIApp, service: MemoryService, clock: ManualClock
) -> None:
    memory = service.write("alice", WriteRequest(content="User prefers tea", entities=["tea"])).memory
    clock.advance(days=10)
    service.search("alice", SearchRequest(query="prefers tea"))
    clock.advance(days=5)
    page = session(app, "key-alice").get(f"/ui/memories/{memory.id}").text
    assert f'<article id="memory" data-memory-id="{memory.id}">' in page
    assert '<dl id="metadata">' in page and "<dt>Entities</dt>" in page
    chart = page[page.index('<svg id="strength-chart" role="img"') : page.index("</svg>")]
    assert "<title" in chart and "<polyline" in chart
    assert chart.count('class="anchor"') == 2  # created, then the recall
    assert 'id="edit"' in page and 'id="forget"' in page and 'id="forget-confirm"' in page


def test_an_archived_memory_is_restored_from_the_archive_in_full(clock: ManualClock) -> None:
    store, archive = InMemoryMemoryStore(clock), InMemoryArchive()
    service = MemoryService(store, InMemoryMemoryIndex(256), HashingEmbedder(256), clock, archive=archive)
    runbook = "Deploy runbook: " + " ".join(f"step {i} check the canary dashboards" for i in range(30))
    memory = service.write("alice", WriteRequest(content=runbook, importance=2, tags=["ops"])).memory
    clock.advance(days=29, hours=12)  # within a day of its expiry: the archive job takes it
    lifecycle = LifecycleService(
        service, InMemoryCheckpointStore(), LifecycleConfig(lookahead=timedelta(days=1))
    )
    assert lifecycle.apply_retention("alice").archived == 1
    client = session(
        create_app(
            service,
            ApiKeyResolver({hash_key("key-alice"): Principal("alice")}, None),
            host="0.0.0.0",
            ui=True,
            ui_secret=SECRET,
        ),
        "key-alice",
    )
    page = client.get(f"/ui/memories/{memory.id}").text
    assert 'class="status-archived"' in page and '<form id="restore"' in page
    shown = re.search(r'<div id="content" class="content" dir="auto">(.*?)</div>', page, re.S)
    assert shown and shown[1].endswith("…") and len(shown[1]) < len(runbook)  # the archive has the rest

    restored = post(client, memory.id, "restore")
    assert restored.status_code == 303 and restored.headers["location"].endswith("done=restored")
    after = service.get("alice", memory.id)
    assert after.status is MemoryStatus.ACTIVE and after.content == runbook and after.tags == ["ops"]
    page = client.get(f"/ui/memories/{memory.id}").text
    shown = re.search(r'<div id="content" class="content" dir="auto">(.*?)</div>', page, re.S)
    assert shown and shown[1] == runbook
    history = page[page.index('id="history"') :]
    assert "archived" in history and "restored" in history
    hits = service.search("alice", SearchRequest(query="canary dashboards runbook", reinforce=False)).results
    assert [h.id for h in hits] == [memory.id]  # indexed again


def test_the_root_redirects_to_the_browser(app: ASGIApp) -> None:
    root = TestClient(app).get("/", follow_redirects=False)
    assert root.status_code == 302 and root.headers["location"] == "/ui"


def test_a_memory_recalled_once_says_once(app: ASGIApp, service: MemoryService) -> None:
    written = service.write("alice", WriteRequest(content="Prefers green tea over coffee"))
    page = session(app, "key-alice").get(f"/ui/memories/{written.memory.id}").text
    assert "(recalled 0 times)" in page
    service.search("alice", SearchRequest(query="green tea coffee", reinforce=True))
    page = session(app, "key-alice").get(f"/ui/memories/{written.memory.id}").text
    assert "(recalled 1 time)" in page


def test_the_memory_page_shows_each_recall_cue_escaped_with_who_wrote_it(
    app: ASGIApp, service: MemoryService
) -> None:
    hostile = '<script>alert(1)</script> "what does Ana drink?"'
    memory = make_memory("Ana drinks green tea", tenant_id="alice").model_copy(
        update={"cues": [Cue(text=hostile, by="<b>planner</b>"), Cue(text="お茶", by=SERVICE_CUE_AUTHOR)]}
    )
    service.store.commit([created(memory)])
    page = session(app, "key-alice").get(f"/ui/memories/{memory.id}").text
    assert "<dt>Recall cues</dt>" in page and '<ul id="cues" class="plain">' in page
    assert f'<span class="cue" dir="auto">{escape(hostile)}</span>' in page
    assert f'<small class="cue-by">by {escape("<b>planner</b>")}</small>' in page
    assert (
        f'<span class="cue" dir="auto">お茶</span> <small class="cue-by">by {SERVICE_CUE_AUTHOR} (the service)</small>'
        in page
    )
    assert "<script>alert" not in page and "<b>planner" not in page

    bare = make_memory("Ana lives in Porto", tenant_id="alice")
    service.store.commit([created(bare)])
    page = session(app, "key-alice").get(f"/ui/memories/{bare.id}").text
    assert "<dt>Recall cues</dt><dd>—</dd>" in page and 'id="cues"' not in page


def test_a_history_change_of_cues_reads_as_text_and_author() -> None:
    before = {"cues": [{"text": "Ana's drink?", "by": "planner"}], "tags": ["a", "b"]}
    after = {"cues": [], "tags": ["a"]}
    event = HistoryEvent(
        id="01EVENT",
        tenant_id="t1",
        memory_id="m1",
        action=HistoryAction.UPDATED,
        at=T0,
        before=before,
        after=after,
    )
    (entry,) = timeline([event])
    assert [(c.field, c.before, c.after) for c in entry.changes] == [
        ("cues", "Ana's drink? (by planner)", "—"),
        ("tags", "a, b", "a"),
    ]

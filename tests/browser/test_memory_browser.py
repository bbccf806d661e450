"""The memory browser as a person uses it: sign in, search, browse, open, edit, forget, restore, sign out.

Every check reads the page a real Chromium rendered; what a correction did is also checked through
the MCP tools (`memory_history`, `memory_get`), so the UI cannot merely claim it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.browser.conftest import KEYS, UiServer, Visitor

pytestmark = pytest.mark.browser

Visit = Callable[..., Visitor]


def test_sign_in_with_a_key_then_sign_out(visitor: Visit, ui: UiServer) -> None:
    person = visitor()
    person.goto("/ui/memories")
    assert re.search(r"/ui/login\?next=", person.page.url), person.page.url  # not signed in yet

    person.page.fill("#api_key", "not-a-key")
    response_status = []
    person.page.on("response", lambda r: response_status.append(r.status) if "/ui/login" in r.url else None)
    person.page.click("#login button[type=submit]")
    alert = person.page.locator("p[role=alert].error")
    assert alert.is_visible()
    assert 401 in response_status
    assert person.page.locator("#api_key").get_attribute("type") == "password"

    person.page.fill("#api_key", KEYS["alice"])
    person.page.click("#login button[type=submit]")
    person.page.wait_for_url(re.compile(r".*/ui/memories$"))  # `next` brought it back
    cookie = next(c for c in person.context.cookies() if c["name"] == "rearview_ui")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    assert KEYS["alice"] not in cookie["value"]
    assert person.page.evaluate("document.cookie") == ""  # not readable by script
    assert KEYS["alice"] not in person.page.url

    person.page.click("#logout button[type=submit]")
    person.page.wait_for_url(re.compile(r".*/ui/login.*"))
    for path in ("/ui/memories", "/ui/search?q=x", "/ui/"):
        person.goto(path)
        assert "/ui/login" in person.page.url, path
    assert not [c for c in person.context.cookies() if c["name"] == "rearview_ui" and c["value"]]


def test_search_shows_each_hit_with_why_it_ranked(visitor: Visit, ui: UiServer) -> None:
    wanted = ui.write("alice", "The staging database runs PostgreSQL 16 on port 5433", importance=5)
    ui.write("alice", "Lunch on Fridays is usually ramen")
    person = visitor()
    person.login("alice")
    person.goto("/ui/search")
    person.page.fill("#q", "which port does the staging database use")
    person.page.press("#q", "Enter")
    person.page.wait_for_selector("#results li.hit")

    first = person.page.locator("#results li.hit").first
    assert first.get_attribute("data-memory-id") == wanted
    assert "PostgreSQL 16" in first.inner_text()
    why = first.locator("details.why")
    why.locator("summary").click()
    assert why.get_attribute("open") is not None
    explained = why.inner_text().lower()
    for term in ("keyword", "vector", "importance", "recency", "strength"):
        assert term in explained, (term, explained)
    assert re.search(r"\d\.\d", explained)  # numbers, not just labels

    first.locator("a.memory-link").click()
    person.page.wait_for_url(re.compile(rf".*/ui/memories/{wanted}(\?.*)?$"))
    assert person.page.locator("#memory").get_attribute("data-memory-id") == wanted

    person.goto("/ui/search?q=staging+database&tags=no-such-tag")
    assert person.page.locator("#no-results").is_visible()
    assert person.page.locator("li.hit").count() == 0


def test_search_filters_narrow_the_results(visitor: Visit, ui: UiServer) -> None:
    kept = ui.write("alice", "Deploy window for the billing service is Tuesday", tags=["billing"])
    other = ui.write("alice", "Deploy window for the search service is Thursday", tags=["search"])
    person = visitor()
    person.login("alice")
    person.goto("/ui/search?q=deploy+window&tags=billing")
    ids = person.page.locator("#results li.hit").evaluate_all("els => els.map(e => e.dataset.memoryId)")
    assert kept in ids and other not in ids


def test_browse_pages_newest_first_with_counts(visitor: Visit, ui: UiServer) -> None:
    written = [
        ui.write("alice", f"Paging note number {n} about topic {n * 7}", session_id="paging")
        for n in range(30)
    ]
    person = visitor()
    person.login("alice")
    person.goto("/ui/memories?session_id=paging")
    assert person.page.locator("#counts").is_visible()
    first_page = person.page.locator("#memories tr[data-memory-id]").evaluate_all(
        "rows => rows.map(r => r.dataset.memoryId)"
    )
    assert first_page == list(reversed(written))[: len(first_page)]  # newest first
    assert 0 < len(first_page) < 30  # one page, never the whole tenant
    person.page.click("a[rel=next]")
    second_page = person.page.locator("#memories tr[data-memory-id]").evaluate_all(
        "rows => rows.map(r => r.dataset.memoryId)"
    )
    assert second_page and not set(first_page) & set(second_page)
    assert second_page == list(reversed(written))[len(first_page) : len(first_page) + len(second_page)]
    assert person.page.locator("#due-archival, a[href*='due']").count() >= 1


def test_edit_makes_a_new_version_shown_in_the_history(visitor: Visit, ui: UiServer) -> None:
    memory_id = ui.write("alice", "The on-call rotation changes every Monday", tags=["ops"], importance=3)
    person = visitor()
    person.login("alice")
    person.goto(f"/ui/memories/{memory_id}")
    assert person.page.locator("#content").inner_text().strip() == "The on-call rotation changes every Monday"

    person.page.fill("#edit-content", "The on-call rotation changes every Wednesday")
    person.page.fill("#edit-importance", "4")
    person.page.fill("#edit-tags", "ops, oncall")
    person.page.click("#edit button[type=submit]")
    person.page.wait_for_url(re.compile(rf".*/ui/memories/{memory_id}(\?.*)?$"))
    assert person.flash()
    assert (
        person.page.locator("#content").inner_text().strip() == "The on-call rotation changes every Wednesday"
    )
    history = person.page.locator("#history")
    assert (
        "every Monday" in history.inner_text() and "every Wednesday" in history.inner_text()
    )  # before/after
    assert person.page.locator("#history ol > li").count() >= 2
    assert person.page.locator("svg#strength-chart[role=img]").count() == 1

    recorded = ui.mcp("alice").call("memory_history", {"memory_id": memory_id})
    assert [e["action"] for e in recorded["events"]] == ["created", "updated"]
    memory = ui.mcp("alice").call("memory_get", {"memory_id": memory_id})
    assert memory["content"] == "The on-call rotation changes every Wednesday"
    assert memory["importance"] == 4 and set(memory["tags"]) == {"ops", "oncall"}


def test_soft_forget_then_restore(visitor: Visit, ui: UiServer) -> None:
    memory_id = ui.write("alice", "The VPN config lives in the shared vault")
    person = visitor()
    person.login("alice")
    person.goto(f"/ui/memories/{memory_id}")
    assert person.page.locator("#restore").count() == 0  # nothing to restore yet

    person.page.check("#forget input[name=mode][value=soft]")
    person.page.click("#forget button[type=submit]")
    person.page.wait_for_url(re.compile(rf".*/ui/memories/{memory_id}(\?.*)?$"))
    assert person.flash()
    assert person.page.locator("#restore").is_visible()

    person.page.click("#restore button[type=submit]")
    person.page.wait_for_url(re.compile(rf".*/ui/memories/{memory_id}(\?.*)?$"))
    assert person.flash()
    assert person.page.locator("#restore").count() == 0
    actions = [
        e["action"] for e in ui.mcp("alice").call("memory_history", {"memory_id": memory_id})["events"]
    ]
    assert actions[:2] == ["created", "forgotten"] and len(actions) == 3
    found = ui.mcp("alice").call("memory_search", {"query": "VPN config shared vault"})
    assert memory_id in [hit["id"] for hit in found["results"]]  # searchable again


def test_verify_records_the_check_shown_on_the_page(visitor: Visit, ui: UiServer) -> None:
    """Issue 47: the Verify button stamps who checked it and when; the content stays, history says so."""
    memory_id = ui.write("alice", "The release train leaves every second Wednesday")
    person = visitor()
    person.login("alice")
    person.goto(f"/ui/memories/{memory_id}")
    assert person.page.locator("#verified").inner_text() == "never"

    person.page.click("#verify button[type=submit]")
    person.page.wait_for_url(re.compile(rf".*/ui/memories/{memory_id}(\?.*)?$"))
    assert person.flash()
    assert person.page.locator("#verified").inner_text().endswith("by default")
    got = ui.mcp("alice").call("memory_get", {"memory_id": memory_id})
    assert got["verified_at"] and got["content"] == "The release train leaves every second Wednesday"
    actions = [
        e["action"] for e in ui.mcp("alice").call("memory_history", {"memory_id": memory_id})["events"]
    ]
    assert actions == ["created", "verified"]


def test_hard_forget_needs_the_id_typed_to_confirm(visitor: Visit, ui: UiServer) -> None:
    memory_id = ui.write("alice", "Temporary password for the demo box is hunter2")
    person = visitor()
    person.login("alice")
    person.goto(f"/ui/memories/{memory_id}")

    person.page.check("#forget input[name=mode][value=hard]")
    person.page.fill("#forget-confirm", "yes")
    person.page.click("#forget button[type=submit]")
    person.page.wait_for_load_state()
    assert ui.mcp("alice").call("memory_get", {"memory_id": memory_id})  # still there
    assert person.page.locator("[role=alert], #flash").count() >= 1

    person.goto(f"/ui/memories/{memory_id}")
    person.page.check("#forget input[name=mode][value=hard]")
    person.page.fill("#forget-confirm", memory_id)
    person.page.click("#forget button[type=submit]")
    person.page.wait_for_url(re.compile(r".*/ui/memories(\?.*)?$"))
    assert person.flash()
    assert person.goto(f"/ui/memories/{memory_id}").status == 404
    error = ui.mcp("alice").error("memory_get", {"memory_id": memory_id})
    assert "not_found" in error

"""Memory content is untrusted: it is shown as text on every page, never run; one tenant never reaches another's.

The payloads are written through the real MCP tools (as an agent would) into content and metadata,
and sent as the search query (reflected). A payload that ran would set `window.__xss` or open a
dialog; `pageerror`s are collected too. Right-to-left overrides and Chinese must come back as
the very characters written.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote_plus

import pytest

from rearview.text import strip_format_chars
from tests.browser.conftest import UiServer, Visitor

pytestmark = pytest.mark.browser

Visit = Callable[..., Visitor]

PAYLOADS = [
    "<script>window.__xss=1;alert('xss')</script>",
    '"><img src=x onerror="window.__xss=1;alert(1)">',
    '\'><svg onload=window.__xss=1></svg><a href="javascript:window.__xss=1">click</a>',
    "{{ 7*7 }} {% raw %}${7*7}",  # template syntax stays text
    "invoice_\u202egnp.exe and \u202bمرحبا بالعالم\u202c right to left",
    "用户喜欢在周五部署，但是不要在节假日前部署",
]
MARK = "quokka"  # one word every hostile memory has, to find them all with one search


def assert_inert(person: Visitor) -> None:
    page = person.page
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert person.dialogs == []
    assert person.page_errors == []
    assert page.locator("img[src='x'], svg[onload], a[href^='javascript:']").count() == 0
    inline_scripts = page.evaluate("[...document.scripts].filter(s => !s.src).length")
    assert inline_scripts == 0


@pytest.fixture(scope="module")
def hostile(ui: UiServer) -> dict[str, str]:
    """Memory id -> the content stored, for each payload (tenant alice).

    Stored content never holds invisible format characters (`strip_format_chars`); metadata keeps
    the payload exactly as written.
    """
    written = {}
    for payload in PAYLOADS:
        content = f"{MARK} {payload}"
        memory_id = ui.write("alice", content, tags=["hostile"], metadata={"note": payload})
        written[memory_id] = strip_format_chars(content)
    return written


def test_hostile_content_is_shown_literally_on_the_memory_page(
    visitor: Visit, ui: UiServer, hostile: dict[str, str]
) -> None:
    person = visitor()
    person.login("alice")
    for index, (memory_id, content) in enumerate(hostile.items()):
        response = person.goto(f"/ui/memories/{memory_id}")
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert person.page.locator("#content").inner_text().strip() == content
        assert PAYLOADS[index] in person.page.locator("#metadata").inner_text()
        assert_inert(person)


def test_hostile_content_is_shown_literally_in_search_and_browse(
    visitor: Visit, ui: UiServer, hostile: dict[str, str]
) -> None:
    person = visitor()
    person.login("alice")
    person.goto(f"/ui/search?q={MARK}&limit=20")
    hits = person.page.locator("#results li.hit")
    found = dict(
        zip(
            hits.evaluate_all("els => els.map(e => e.dataset.memoryId)"),
            hits.all_inner_texts(),
            strict=True,
        )
    )
    assert set(hostile) <= set(found)
    for memory_id, content in hostile.items():
        assert content in found[memory_id], (content, found[memory_id])
    for details in person.page.locator("details.why").all():
        details.locator("summary").click()
    assert_inert(person)

    person.goto("/ui/memories?tag=hostile")
    rows = person.page.locator("#memories tr[data-memory-id]")
    shown = dict(
        zip(rows.evaluate_all("els => els.map(e => e.dataset.memoryId)"), rows.all_inner_texts(), strict=True)
    )
    assert set(shown) == set(hostile)
    for memory_id, content in hostile.items():
        assert content[:40] in shown[memory_id]
    assert_inert(person)


@pytest.mark.parametrize("payload", PAYLOADS[:3])
def test_a_hostile_query_is_not_reflected_as_markup(visitor: Visit, payload: str) -> None:
    person = visitor()
    person.login("alice")
    person.goto(f"/ui/search?q={quote_plus(payload)}&tags={quote_plus(payload)}")
    assert person.page.locator("#q").input_value() == payload
    assert_inert(person)


def test_another_tenant_can_neither_see_nor_change_a_memory(visitor: Visit, ui: UiServer) -> None:
    secret = ui.write("alice", "Alice's roadmap: acquire the llama farm in Q3", importance=5)
    own = ui.write("bob", "Bob's own note about the weekly sync")
    bob = visitor()
    bob.login("bob")

    response = bob.goto(f"/ui/memories/{secret}")
    assert response.status == 404
    assert "llama farm" not in bob.page.content()
    bob.goto("/ui/search?q=llama+farm+roadmap")
    assert secret not in bob.page.content()
    bob.goto("/ui/memories")
    assert bob.page.locator(f"tr[data-memory-id='{secret}']").count() == 0

    # Bob's own forms, pointed at Alice's memory: each refused as if it did not exist.
    for form, fill in (
        ("edit", lambda: bob.page.fill("#edit-content", "Bob was here")),
        (
            "forget",
            lambda: (bob.page.check("#forget input[value=hard]"), bob.page.fill("#forget-confirm", secret)),
        ),
        ("restore", None),
    ):
        bob.goto(f"/ui/memories/{own}")
        if form == "restore":  # only shown for a forgotten memory: forge it onto the page
            bob.page.evaluate(
                """([action, token]) => {
                    const f = document.createElement('form');
                    f.id = 'restore'; f.method = 'post'; f.action = action;
                    const t = document.createElement('input');
                    t.type = 'hidden'; t.name = 'csrf_token'; t.value = token; f.appendChild(t);
                    const b = document.createElement('button'); b.type = 'submit'; f.appendChild(b);
                    document.body.appendChild(f);
                }""",
                [
                    f"/ui/memories/{secret}/restore",
                    bob.page.locator("input[name=csrf_token]").first.input_value(),
                ],
            )
        else:
            assert fill is not None
            fill()
            bob.page.evaluate(
                "([id, action]) => { document.getElementById(id).action = action; }",
                [form, f"/ui/memories/{secret}/{form}"],
            )
        with bob.page.expect_response(lambda r: r.request.method == "POST") as posted:
            bob.page.click(f"#{form} button[type=submit]")
        assert posted.value.status in {403, 404}, form  # 404 as for a missing id (403: a token for another)
        assert "llama farm" not in bob.page.content()

    untouched = ui.mcp("alice").call("memory_get", {"memory_id": secret})
    assert untouched["content"] == "Alice's roadmap: acquire the llama farm in Q3"
    assert untouched["version"] == 1 and untouched["status"] == "active"
    assert [e["action"] for e in ui.mcp("alice").call("memory_history", {"memory_id": secret})["events"]] == [
        "created"
    ]


def test_a_cross_site_page_cannot_make_a_signed_in_browser_forget(visitor: Visit, ui: UiServer) -> None:
    """CSRF: another site's auto-submitting form, in the browser of a signed-in user."""
    memory_id = ui.write("alice", "Quarterly numbers are in the finance drive")
    person = visitor()
    person.login("alice")
    target = ui.url(f"/ui/memories/{memory_id}/forget")
    attack = f"""<!doctype html><form id=f method=post action="{target}">
        <input name=mode value=hard><input name=confirm value="{memory_id}">
        <input name=csrf_token value=guess></form><script>document.getElementById('f').submit()</script>"""
    person.context.route(
        "http://attacker.test/**", lambda route: route.fulfill(body=attack, content_type="text/html")
    )
    with person.page.expect_response(lambda r: r.request.method == "POST") as posted:
        person.page.goto("http://attacker.test/")
    assert posted.value.status in {303, 403}  # no cookie (SameSite=Strict) -> login, or refused
    assert ui.mcp("alice").call("memory_get", {"memory_id": memory_id})["status"] == "active"

"""A tour of the main screens with realistic memories (tenant `demo`), screenshotted as it goes.

`REARVIEW_SCREENSHOTS=1 pytest tests/browser/test_screenshots.py` refreshes docs/screenshots/
(docs/local-server.md shows them); without it the PNGs go to pytest's temporary directory only. Each
screen is checked before it is shot, so a broken page fails here rather than in the docs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.browser.conftest import PHONE, UiServer, Visitor

pytestmark = pytest.mark.browser

Visit = Callable[..., Visitor]
Shoot = Callable[..., Path]

DEMO = [
    ("User prefers pytest over unittest and runs tests with `make test`", "procedural", ["testing"], 4),
    ("The staging database is PostgreSQL 16 on db.staging.internal:5433", "semantic", ["infra", "db"], 5),
    ("Deploys to production happen on Tuesdays after the 10:00 stand-up", "procedural", ["deploy"], 4),
    ("User is migrating the billing service from Flask to FastAPI", "episodic", ["billing"], 3),
    ("Code review: keep functions under 40 lines, prefer dataclasses", "semantic", ["style"], 3),
    ("The user's timezone is Europe/Lisbon", "semantic", ["profile"], 2),
    ("Draft notes for today's refactoring session", "working", ["scratch"], 1),
]


def test_tour_of_the_main_screens(visitor: Visit, ui: UiServer, screenshot: Shoot) -> None:
    ids = [
        ui.write("demo", content, type=kind, tags=tags, importance=importance, session_id="demo-session")
        for content, kind, tags, importance in DEMO
    ]
    database = ids[1]
    for query in ("staging database port", "which postgres version", "database host"):
        ui.mcp("demo").call("memory_search", {"query": query})  # recalls reinforce its strength

    signing_in = visitor(viewport={"width": 900, "height": 360})
    signing_in.goto("/ui/login")
    assert signing_in.page.locator("#login label[for=api_key]").is_visible()
    screenshot(signing_in.page, "login")

    person = visitor()
    person.login("demo")
    assert person.page.locator("#memories tr[data-memory-id]").count() == len(DEMO)
    assert person.page.locator("#counts").is_visible()
    screenshot(person.page, "browse")

    person.goto(f"/ui/memories/{database}")
    person.page.fill("#edit-content", "The staging database is PostgreSQL 17 on db.staging.internal:5433")
    person.page.click("#edit button[type=submit]")
    person.page.wait_for_url(re.compile(rf".*/ui/memories/{database}(\?.*)?$"))
    assert "PostgreSQL 16" in person.page.locator("#history").inner_text()
    assert person.page.locator("svg#strength-chart").is_visible()
    screenshot(person.page, "memory")

    person.goto("/ui/search?q=" + "what+port+is+the+staging+database+on")
    first = person.page.locator("#results li.hit").first
    assert first.get_attribute("data-memory-id") == database
    first.locator("details.why summary").click()
    screenshot(person.page, "search")

    phone = visitor(viewport=PHONE)
    phone.login("demo")
    phone.goto(f"/ui/memories/{database}")
    assert phone.page.locator("#content").is_visible()
    screenshot(phone.page, "memory-phone", full_page=False)  # what a phone shows first

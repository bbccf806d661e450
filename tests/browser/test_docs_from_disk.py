"""The documentation site opened from disk (file://), as a user who ran `make docs` opens site/index.html.

No server: every nav link must land on a page (not a directory listing), and search must answer
(its index is a script the page loads, not a fetch, which a file:// page is refused).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import DESKTOP

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytest.importorskip("mkdocs", reason="mkdocs is not installed (the dev extra has it)")
pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make docs`'s build, into a temporary directory."""
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page that records script errors (`page.errors`)."""
    context = browser.new_context(viewport=DESKTOP, locale="en-US")
    context.set_default_timeout(10_000)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.errors = errors  # type: ignore[attr-defined]
    yield opened
    context.close()


def _nav_links(page: Page) -> list[str]:
    hrefs: list[str] = page.eval_on_selector_all(
        "nav.wy-nav-side .wy-menu-vertical a.reference.internal", "links => links.map(a => a.href)"
    )
    return [href for href in hrefs if "#" not in href]


def test_every_nav_link_opens_a_page_from_disk(site: Path, page: Page) -> None:
    page.goto((site / "index.html").as_uri())
    links = _nav_links(page)
    assert len(links) >= 9, links  # every page but the one open
    for href in links:
        assert href.endswith(".html"), f"{href}: a nav link to a folder shows a listing from disk"
    page.get_by_role("link", name="The local server", exact=True).first.click()
    page.wait_for_load_state()
    assert page.url.endswith("/local-server.html"), page.url
    assert "Index of" not in page.title()
    assert page.locator("div[role=main] h1").first.inner_text().startswith("The local server")
    assert page.errors == []  # type: ignore[attr-defined]


def test_search_answers_from_disk(site: Path, page: Page) -> None:
    page.goto((site / "index.html").as_uri())
    page.fill("#rtd-search-form input[name=q]", "mem0")
    page.press("#rtd-search-form input[name=q]", "Enter")
    page.wait_for_url(re.compile(r".*/search\.html\?q=mem0"))
    results = page.locator("#mkdocs-search-results article h3 a")
    results.first.wait_for()
    hrefs = results.evaluate_all("links => links.map(a => a.href)")
    assert any(href.split("#")[0].endswith("/importers.html") for href in hrefs), hrefs
    results.first.click()
    page.wait_for_load_state()
    assert page.url.startswith("file://") and ".html" in page.url
    assert page.errors == []  # type: ignore[attr-defined]


def test_search_says_so_when_nothing_matches(site: Path, page: Page) -> None:
    page.goto((site / "search.html").as_uri() + "?q=zzqxjvkw")
    box = page.locator("#mkdocs-search-results")
    box.get_by_text("No results found").wait_for()
    assert page.errors == []  # type: ignore[attr-defined]

"""The browser tier: Debian's Chromium, driven by Playwright, against a real server with the memory browser.

One server per package (SQLite + embedded index, hashing embedder) with API keys for three
tenants: `alice` and `bob` (the isolation tests) and `demo` (the screenshots, kept free of the
hostile content other tests write). Memories are written through the real MCP endpoint.

Chromium: `$REARVIEW_CHROMIUM`, else `/usr/bin/chromium` (`make test` installs it with apt-get,
tests/engines/chromium/ensure.sh). Missing, every browser test FAILS saying so; set
`REARVIEW_SKIP_BROWSER=1` to skip them instead (a developer without a browser). Playwright never
downloads a browser of its own here.

Screenshots: `screenshot(page, name)` always writes `<tmp>/screenshots/<name>.png`; with
`REARVIEW_SCREENSHOTS=1` it also copies them to `docs/screenshots/` (the ones docs/local-server.md shows).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.server import running_ui_server
from tests.mcp_client import BlockingClient, blocking_client

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright

ROOT = Path(__file__).resolve().parents[2]
DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
CHROMIUM = os.environ.get("REARVIEW_CHROMIUM", "/usr/bin/chromium")

KEYS = {"alice": "key-alice-0123456789", "bob": "key-bob-0123456789", "demo": "key-demo-0123456789"}
CONFIG = "[api_keys]\n" + "".join(f'"{key}" = "{tenant}"\n' for tenant, key in KEYS.items())

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


class UiServer:
    """The running server: its base URL, and MCP clients per tenant (opened on first use)."""

    def __init__(self, base: str, stack: ExitStack) -> None:
        self.base = base
        self.mcp_url = f"{base}/mcp"
        self._stack = stack
        self._clients: dict[str, BlockingClient] = {}

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def mcp(self, tenant: str) -> BlockingClient:
        """An MCP client signed in with `tenant`'s key (writes go through the real tool path)."""
        if tenant not in self._clients:
            self._clients[tenant] = self._stack.enter_context(
                blocking_client(self.mcp_url, "2026-07-28", KEYS[tenant])
            )
        return self._clients[tenant]

    def write(self, tenant: str, content: str, **args: Any) -> str:
        """Write a memory as `tenant` through `memory_write`; its id."""
        written = self.mcp(tenant).call("memory_write", {"content": content, **args})
        memory_id: str = written["id"]
        return memory_id


@pytest.fixture(scope="package")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    home = tmp_path_factory.mktemp("ui-server")
    config = home / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    with ExitStack() as stack:
        base = stack.enter_context(running_ui_server(home / "data", config_file=config))
        yield UiServer(base, stack)


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    if os.environ.get("REARVIEW_SKIP_BROWSER") == "1":
        pytest.skip("REARVIEW_SKIP_BROWSER=1: browser tests skipped")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: the browser tests need Debian's chromium. Run `make test` "
            "(it installs it with apt-get), or `apt-get install -y chromium`, or point REARVIEW_CHROMIUM at "
            "a Chromium; set REARVIEW_SKIP_BROWSER=1 to skip these tests.",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the `playwright` package is missing: pip install -e '.[dev]'", pytrace=False)
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
    yield launched
    launched.close()


class Visitor:
    """One browser context (its own cookie jar): a person at a browser, watching for dialogs and errors."""

    def __init__(self, context: BrowserContext, ui: UiServer) -> None:
        self.context = context
        self.ui = ui
        context.set_default_timeout(10_000)
        self.page = context.new_page()
        self.dialogs: list[str] = []
        self.page_errors: list[str] = []
        self.page.on("dialog", self._on_dialog)
        self.page.on("pageerror", lambda error: self.page_errors.append(str(error)))

    def _on_dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def goto(self, path: str) -> Any:
        """Open a /ui path; the main response."""
        return self.page.goto(self.ui.url(path))

    def login(self, tenant: str) -> None:
        """Sign in through the login form with `tenant`'s key; lands on the browse page."""
        self.goto("/ui/login")
        self.page.fill("#api_key", KEYS[tenant])
        self.page.click("#login button[type=submit]")
        self.page.wait_for_url(re.compile(r".*/ui/memories.*"))

    def flash(self) -> str:
        return self.page.locator("#flash").inner_text()


@pytest.fixture
def visitor(browser: Browser, ui: UiServer) -> Callable[..., Visitor]:
    """A factory of signed-out visitors (desktop size unless `viewport` says otherwise)."""
    contexts: list[BrowserContext] = []

    def make(viewport: dict[str, int] | None = None) -> Visitor:
        context = browser.new_context(viewport=viewport or DESKTOP, locale="en-US")
        contexts.append(context)
        return Visitor(context, ui)

    yield make
    for context in contexts:
        context.close()


@pytest.fixture(scope="package")
def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def screenshot(screenshot_dir: Path) -> Callable[..., Path]:
    """Save a PNG (the whole page unless `full_page=False`); copied to docs/screenshots/ when REARVIEW_SCREENSHOTS=1."""

    def shoot(page: Page, name: str, full_page: bool = True) -> Path:
        path = screenshot_dir / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page, animations="disabled")
        assert path.stat().st_size > 1000, name
        if os.environ.get("REARVIEW_SCREENSHOTS") == "1":
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS_SCREENSHOTS / path.name)
        return path

    return shoot

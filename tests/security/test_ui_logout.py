"""Signing out of the memory browser ends the session on the server (issue 24, item 7).

The cookie is signed, not stored: before, `/ui/logout` only asked the browser to drop it, and the
same value (kept by a proxy log, a shared machine, a stolen copy) still signed in for the rest of
its 8 hours. Now logout revokes it where every instance looks: replaying the old cookie is a
sign-in page, on this server, on another instance sharing the store and after a restart.
"""

from __future__ import annotations

import re
from pathlib import Path

from starlette.testclient import TestClient
from starlette.types import ASGIApp

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.backends.sqlite_checkpoints import SQLiteCheckpointStore
from rearview.config.settings import hash_key
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal
from rearview.ui.session import COOKIE_NAME

SECRET = "a-test-secret-of-enough-length-0123"
KEY = "key-alice-1"


def _app(service: MemoryService, revocations: Path) -> ASGIApp:
    resolver = ApiKeyResolver({hash_key(KEY): Principal("alice")}, None)
    store = SQLiteCheckpointStore(revocations)
    store.ensure_schema()
    return create_app(service, resolver, host="0.0.0.0", ui=True, ui_secret=SECRET, ui_revocations=store)


def _signed_in_page(client: TestClient, cookie: str) -> bool:
    client.cookies.clear()
    response = client.get("/ui/memories", cookies={COOKIE_NAME: cookie}, follow_redirects=False)
    return response.status_code == 200 and 'id="logout"' in response.text


def test_a_signed_out_cookie_no_longer_signs_in(service: MemoryService, tmp_path: Path) -> None:
    revocations = tmp_path / "lifecycle.sqlite3"
    client = TestClient(_app(service, revocations))
    login = client.post("/ui/login", data={"api_key": KEY}, follow_redirects=False)
    assert login.status_code == 303
    cookie = client.cookies[COOKIE_NAME]
    page = client.get("/ui/memories")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token is not None

    out = client.post("/ui/logout", data={"csrf_token": token.group(1)}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/ui/login"

    assert not _signed_in_page(client, cookie)  # the same server
    other_instance = TestClient(_app(service, revocations))  # another Lambda instance, or a restart
    assert not _signed_in_page(other_instance, cookie)


def test_signing_out_ends_only_that_session(service: MemoryService, tmp_path: Path) -> None:
    app = _app(service, tmp_path / "lifecycle.sqlite3")
    first, second = TestClient(app), TestClient(app)
    for client in (first, second):
        assert client.post("/ui/login", data={"api_key": KEY}, follow_redirects=False).status_code == 303
    kept = second.cookies[COOKIE_NAME]
    page = first.get("/ui/memories")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token is not None
    first.post("/ui/logout", data={"csrf_token": token.group(1)}, follow_redirects=False)

    assert _signed_in_page(second, kept)

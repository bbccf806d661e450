"""What every page of the memory browser stands on: `BrowserBase` (`app.MemoryBrowser` adds the routes).

Its configuration (`UiConfig`), the request's session, rendering (the templates, `FLASH`, `when`),
the tenant's share and the checks of a POST.

A page for a signed-in session is wrapped in `signed_in`: without a session it answers the login
form, with one it runs in the session's tenant's share (429 over its request rate).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial, wraps
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from rearview.api.auth import ApiKeyResolver
from rearview.api.refusals import RefusedKeyLimiter
from rearview.models import DEFAULT_AGENT, SERVICE_CUE_AUTHOR
from rearview.service.memory_service import MemoryService
from rearview.ui import csrf
from rearview.ui.inputs import read_form, served_hosts
from rearview.ui.session import COOKIE_NAME, UI_PATH, Session, SessionCodec, SessionRevocations, open_session
from rearview.ui.tenant_share import TenantShare
from rearview.ui.views import Params, first, linked_ids

TEMPLATES = Path(__file__).parent / "templates"
FLASH = {
    "edited": "Saved: a new version is recorded in the history.",
    "unchanged": "Nothing changed.",
    "forgotten": "Forgotten (soft): restore it below to bring it back.",
    "erased": "Erased for good (hard forget).",
    "restored": "Restored.",
    "verified": "Verified.",
    "signed-in": "Signed in.",
}
"""The only messages a redirect can ask a page to show (`?done=<key>`): no text comes from the URL."""


@dataclass(frozen=True, slots=True)
class UiConfig:
    """What the UI needs besides the service: who may sign in, how sessions are signed, where it is served."""

    resolver: ApiKeyResolver
    codec: SessionCodec
    public_url: str | None = None
    trust_forwarded: bool = False
    refusals: RefusedKeyLimiter = field(default_factory=RefusedKeyLimiter)
    """Shared with `/mcp`'s `TenantAuth`: refused keys from one address count together."""
    revocations: SessionRevocations = field(default_factory=SessionRevocations)
    """Signed-out sessions: checked on every request, written by `/ui/logout`."""
    share: TenantShare | None = None
    """The request rate and lanes shared with `/mcp` (`create_app`'s); None: a share of the UI's own."""


B = TypeVar("B", bound="BrowserBase")


def signed_in(
    page: Callable[[B, Request, Session], Awaitable[Response]],
) -> Callable[[B, Request], Awaitable[Response]]:
    """A page for a signed-in session (else the login form), served in its tenant's share."""

    @wraps(page)
    async def handler(self: B, request: Request) -> Response:
        session = self.session(request)
        if session is None:
            return self.to_login(request)
        return await self.in_share(request, session, partial(page, self, request, session))

    return handler


class BrowserBase:
    """The UI's plumbing over one `MemoryService`: the session, rendering, the tenant's share, POST checks."""

    def __init__(self, service: MemoryService, config: UiConfig) -> None:
        self.service = service
        self.config = config
        self.share = config.share or TenantShare.build(service)
        self.templates = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters["when"] = when
        self.templates.filters["linked_ids"] = linked_ids
        self.templates.globals["service_cue_author"] = SERVICE_CUE_AUTHOR

    @property
    def where(self) -> tuple[str | None, bool]:
        """The public URL and whether forwarded headers count: how to tell which origin we are."""
        return self.config.public_url, self.config.trust_forwarded

    @property
    def open(self) -> bool:
        return self.config.resolver.open

    def session(self, request: Request) -> Session | None:
        """The request's session: the open one when no keys are configured, else the verified cookie's."""
        if self.open:
            principal = self.config.resolver.principal_for(None)
            return open_session(principal.tenant_id) if principal else None
        session = self.config.codec.verify(
            request.cookies.get(COOKIE_NAME), self.config.resolver, int(time.time())
        )
        if session is None or self.config.revocations.revoked(session):
            return None
        return session

    def render(
        self, request: Request, name: str, session: Session | None, status: int = 200, **context: Any
    ) -> HTMLResponse:
        template = self.templates.get_template(name)
        agent = context.get("agent")
        unbound = session is not None and session.agent_id is None
        agent_suffix = (
            "?" + urlencode({"agent_id": agent}) if unbound and agent and agent != DEFAULT_AGENT else ""
        )
        html = template.render(
            agent_suffix=agent_suffix,
            session=session,
            open_mode=self.open,
            csrf_token=csrf.token(self.config.codec, session) if session else "",
            flash=FLASH.get(request.query_params.get("done", "")),
            path=request.url.path,
            **context,
        )
        return HTMLResponse(html, status_code=status)

    def error_page(
        self, request: Request, session: Session | None, status: int, message: str
    ) -> HTMLResponse:
        return self.render(request, "error.html", session, status=status, status_code=status, message=message)

    def to_login(self, request: Request) -> Response:
        """303 to the login form, which then returns to this page (a refused POST: to the memories)."""
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if request.method != "GET":
            target = f"{UI_PATH}/memories"
        return RedirectResponse(f"{UI_PATH}/login?{urlencode({'next': target})}", status_code=303)

    async def in_share(
        self, request: Request, session: Session, work: Callable[[], Awaitable[Response]]
    ) -> Response:
        """`work()` as a request of the session's tenant: 429 over its rate, else a visit (`TenantShare`)."""
        wait = await self.share.admit(session.tenant_id)
        if wait:
            page = self.error_page(
                request, session, 429, f"Too many requests for this tenant: try again in {wait} seconds."
            )
            page.headers["Retry-After"] = str(wait)
            return page
        async with self.share.visit(session.tenant_id):
            return await work()

    async def checked_post(self, request: Request) -> tuple[Session, Params] | Response:
        """Session, origin and CSRF checks of a POST: its session and form, or the response refusing it."""
        session = self.session(request)
        if session is None:
            return self.to_login(request)
        if not csrf.same_origin(request.headers.get("origin"), served_hosts(request, *self.where)):
            return self.error_page(request, session, 403, "Refused: this form was sent from another site.")
        form = await read_form(request)
        if not csrf.valid_token(self.config.codec, session, first(form, csrf.FIELD)):
            return self.error_page(
                request, session, 403, "Refused: the form's security token is missing or stale."
            )
        return session, form


def when(moment: datetime) -> str:
    """A timestamp as the pages show it: UTC, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

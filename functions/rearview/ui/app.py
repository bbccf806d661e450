"""The memory browser's routes (`/ui/...`) and the ASGI app `create_app` mounts beside `/mcp`.

Pages (the UI contract, docs/local-server.md "Memory browser"): `/ui/login` and `/ui/logout`; `/ui/search`
(memory_search as the agent sees it, with each hit's explanation); `/ui/memories` (browse, newest
first, paged, with counts and what is due for archival); `/ui/memories/<id>` (one memory, its
history and strength chart) with POST `edit`, `verify`, `forget` and `restore`. Everything a user does goes
through `MemoryService`, as the tenant of the session (never of a form field) and the agent the
page names (or the key's bound agent). A memory the session may not see is the same 404 as an
unknown id.

Every POST needs a valid session, the session's CSRF token and no foreign `Origin` (403 otherwise).
A signed-in session's pages and forms are its tenant's requests: they take from its request rate
(429 over it) and their service calls run in its lanes, as `/mcp`'s do (`rearview.ui.tenant_share`).
What every page stands on (the session, rendering, the share, the POST checks) is `browser.BrowserBase`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from rearview.api.auth import authenticate, key_fingerprint
from rearview.api.refusals import client_address
from rearview.config.settings import hash_key
from rearview.errors import (
    BusyError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    NotPermittedError,
    RearviewError,
)
from rearview.models import DEFAULT_AGENT, ForgetRequest, MemoryStatus, MemoryType, UpdateRequest
from rearview.service.memory_service import MemoryService
from rearview.ui import csrf
from rearview.ui.browser import BrowserBase, UiConfig, signed_in
from rearview.ui.charts import strength_chart
from rearview.ui.inputs import is_https, query_params, read_form, safe_next, served_hosts
from rearview.ui.security_headers import HostGuard, SecurityHeaders
from rearview.ui.session import COOKIE_NAME, COOKIE_PATH, SESSION_TTL_S, UI_PATH, Session
from rearview.ui.views import (
    Params,
    agent_for,
    browse_query,
    edit_request,
    first,
    forget_mode,
    search_form,
    timeline,
)

HERE = Path(__file__).parent
Handler = Callable[[Request], Awaitable[Response]]
BUSY_RETRY_S = 1
"""`Retry-After` of a page refused because its tenant's lane is full (`BusyError`)."""


class MemoryBrowser(BrowserBase):
    """The UI's request handlers over one `MemoryService`."""

    # --------------------------------------------------------------------------------- auth

    async def login_page(self, request: Request) -> Response:
        if self.open:
            return RedirectResponse(f"{UI_PATH}/memories", status_code=303)
        return self.render(request, "login.html", None, next=safe_next(request.query_params.get("next")))

    async def login(self, request: Request) -> Response:
        if self.open:
            return RedirectResponse(f"{UI_PATH}/memories", status_code=303)
        if not csrf.same_origin(request.headers.get("origin"), served_hosts(request, *self.where)):
            return self.error_page(request, None, 403, "Refused: this form was sent from another site.")
        form = await read_form(request)
        key = first(form, "api_key")
        target = safe_next(first(form, "next"))
        client = client_address(request.scope, self.config.refusals.proxies)
        verdict = await run_in_threadpool(
            authenticate, self.config.resolver, self.config.refusals, key, client
        )
        principal = verdict.principal
        if verdict.retry_after:  # the key was not checked (rearview.api.refusals)
            wait = verdict.retry_after
            page = self.render(
                request, "login.html", None, status=429, next=target,
                error=f"Too many keys were refused from this address. Try again in {wait} seconds.",
            )  # fmt: skip
            page.headers["Retry-After"] = str(wait)
            return page
        if principal is None:
            return self.render(
                request, "login.html", None, status=401, next=target,
                error="That API key was not accepted.",
            )  # fmt: skip
        _, cookie = self.config.codec.issue(principal, key_fingerprint(hash_key(key)), int(time.time()))
        response = RedirectResponse(target or f"{UI_PATH}/", status_code=303)
        response.set_cookie(
            COOKIE_NAME, cookie, max_age=SESSION_TTL_S, path=COOKIE_PATH,
            httponly=True, samesite="strict", secure=is_https(request, *self.where),
        )  # fmt: skip
        return response

    async def logout(self, request: Request) -> Response:
        checked = await self.checked_post(request)
        if isinstance(checked, Response):
            return checked
        session, _ = checked
        if not session.open:
            await run_in_threadpool(self.config.revocations.revoke, session)
        response = RedirectResponse(f"{UI_PATH}/login", status_code=303)
        response.delete_cookie(COOKIE_NAME, path=COOKIE_PATH, httponly=True, samesite="strict")
        return response

    # -------------------------------------------------------------------------------- pages

    async def home(self, request: Request) -> Response:
        return RedirectResponse(f"{UI_PATH}/memories", status_code=303)

    @signed_in
    async def search(self, request: Request, session: Session) -> Response:
        params = query_params(request)
        form, result, error, agent = None, None, None, None
        try:
            agent = agent_for(session, params)
            form = search_form(params)
            if form.q:
                tenant = session.tenant_id
                result = await self.share.search(
                    tenant, partial(self.service.search, tenant, form.request(agent))
                )
        except InvalidInputError as exc:
            error = str(exc)
        return self.render(
            request, "search.html", session, status=400 if error else 200,
            form=form or search_form({}), result=result, error=error, agent=agent or "",
            types=[t.value for t in MemoryType],
        )  # fmt: skip

    @signed_in
    async def memories(self, request: Request, session: Session) -> Response:
        params = query_params(request)
        try:
            agent = agent_for(session, params)
            query = browse_query(params)
            flt = query.filter()
            tenant = session.tenant_id
            call = self.share.call
            page = await call(
                tenant, partial(self.service.browse, tenant, flt, agent, query.cursor, query.limit)
            )
            # The due list reads up to DUE_SCAN_LIMIT memories: only on the first page.
            due = (
                None
                if query.cursor
                else await call(tenant, partial(self.service.due_for_archival, tenant, agent))
            )
            stats = await call(tenant, partial(self.service.stats, tenant))
        except InvalidInputError as exc:
            return self.error_page(request, session, 400, str(exc))
        next_url = None
        if page.cursor:
            keep = {k: v for k, v in params.items() if k != "cursor"}
            next_url = f"{UI_PATH}/memories?" + urlencode({**keep, "cursor": [page.cursor]}, doseq=True)
        return self.render(
            request, "memories.html", session, page=page, due=due, stats=stats, query=query,
            agent=agent, next_url=next_url, types=[t.value for t in MemoryType],
            statuses=[s.value for s in MemoryStatus],
        )  # fmt: skip

    @signed_in
    async def memory(self, request: Request, session: Session) -> Response:
        try:
            agent = agent_for(session, query_params(request))
        except InvalidInputError as exc:
            return self.error_page(request, session, 400, str(exc))
        return await self.memory_page(request, session, agent, request.path_params["memory_id"])

    async def memory_page(
        self,
        request: Request,
        session: Session,
        agent: str,
        memory_id: str,
        status: int = 200,
        error: str | None = None,
    ) -> Response:
        tenant = session.tenant_id
        try:
            history = await self.share.call(tenant, partial(self.service.history, tenant, memory_id, agent))
            points = await self.share.call(
                tenant, partial(self.service.strength_history, tenant, memory_id, agent)
            )
        except (NotFoundError, InvalidInputError):
            return self.error_page(request, session, 404, "No such memory.")
        memory = history.memory
        chart = strength_chart(points, self.service.config.policy(tenant).decay, self.service.clock.now())
        return self.render(
            request, "memory.html", session, status=status, memory=memory, timeline=timeline(history.events),
            chart=chart, agent=agent, error=error,
        )  # fmt: skip

    # ---------------------------------------------------------------------------- mutations

    async def edit(self, request: Request) -> Response:
        return await self.mutate(request, self._edit)

    async def forget(self, request: Request) -> Response:
        return await self.mutate(request, self._forget)

    async def restore(self, request: Request) -> Response:
        return await self.mutate(request, self._restore)

    async def verify(self, request: Request) -> Response:
        return await self.mutate(request, self._verify)

    async def mutate(self, request: Request, action: Callable[[Session, str, str, Params], str]) -> Response:
        """Check the POST, run `action` (-> flash key) in a thread, redirect; errors re-render the page."""
        checked = await self.checked_post(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        return await self.in_share(request, session, partial(self._mutate, request, session, form, action))

    async def _mutate(
        self,
        request: Request,
        session: Session,
        form: Params,
        action: Callable[[Session, str, str, Params], str],
    ) -> Response:
        memory_id = request.path_params["memory_id"]
        try:
            agent = agent_for(session, form)
        except InvalidInputError as exc:
            return self.error_page(request, session, 400, str(exc))
        try:
            done = await self.share.call(session.tenant_id, partial(action, session, agent, memory_id, form))
        except NotFoundError:
            return self.error_page(request, session, 404, "No such memory.")
        except InvalidInputError as exc:
            return await self.memory_page(request, session, agent, memory_id, 400, str(exc))
        except (ConflictError, NotPermittedError) as exc:  # shown on the memory's page, as it is now
            status, message = (
                (409, "This memory changed since you opened it: review the new version and try again.")
                if isinstance(exc, ConflictError)
                else (403, str(exc))
            )
            return await self.memory_page(request, session, agent, memory_id, status, message)
        page = (
            f"{UI_PATH}/memories" if done == "erased" else f"{UI_PATH}/memories/{quote(memory_id, safe='')}"
        )
        return RedirectResponse(f"{page}?done={done}{_agent_query(session, agent)}", status_code=303)

    def _edit(self, session: Session, agent: str, memory_id: str, form: Params) -> str:
        current = self.service.get(session.tenant_id, memory_id, agent)
        req = edit_request(form, current, agent, agent_bound=session.agent_id is not None)
        if req is None:
            return "unchanged"
        self.service.update(session.tenant_id, req)
        return "edited"

    def _verify(self, session: Session, agent: str, memory_id: str, form: Params) -> str:
        bound = session.agent_id is not None
        req = UpdateRequest(memory_id=memory_id, verified=True, agent_id=agent, agent_bound=bound)
        self.service.update(session.tenant_id, req)
        return "verified"

    def _forget(self, session: Session, agent: str, memory_id: str, form: Params) -> str:
        hard = forget_mode(form, memory_id)
        bound = session.agent_id is not None  # a key bound to an agent changes only what it wrote
        self.service.forget(
            session.tenant_id, ForgetRequest(ids=[memory_id], hard=hard, agent_id=agent, agent_bound=bound)
        )
        return "erased" if hard else "forgotten"

    def _restore(self, session: Session, agent: str, memory_id: str, form: Params) -> str:
        bound = session.agent_id is not None  # a key bound to an agent undoes only its own forgets
        self.service.restore(session.tenant_id, memory_id, agent, agent_bound=bound)
        return "restored"

    # ------------------------------------------------------------------------------- errors

    async def http_error(self, request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "Something went wrong."
        return self.error_page(request, self.session(request), status, str(detail))

    async def rearview_error(self, request: Request, exc: Exception) -> Response:
        if isinstance(exc, BusyError):  # the tenant's share of a lane is full: as `/mcp`'s `busy`
            page = self.error_page(request, self.session(request), 503, f"Busy: {exc}")
            page.headers["Retry-After"] = str(BUSY_RETRY_S)
            return page
        return self.error_page(request, self.session(request), 503, "The memory service failed; try again.")


def _agent_query(session: Session, agent: str) -> str:
    """`&agent_id=...` to keep an unbound session's chosen agent across a redirect ('' for the default)."""
    return (
        "" if session.agent_id is not None or agent == DEFAULT_AGENT else "&" + urlencode({"agent_id": agent})
    )


def build_ui(service: MemoryService, config: UiConfig, loopback: bool) -> ASGIApp:
    """The UI's ASGI app (paths under `/ui`): security headers on everything, Host checked when `loopback`."""
    ui = MemoryBrowser(service, config)
    memory = f"{UI_PATH}/memories/{{memory_id}}"
    routes = [
        Route(UI_PATH, ui.home, methods=["GET"]),
        Route(f"{UI_PATH}/", ui.home, methods=["GET"]),
        Route(f"{UI_PATH}/login", ui.login_page, methods=["GET"]),
        Route(f"{UI_PATH}/login", ui.login, methods=["POST"]),
        Route(f"{UI_PATH}/logout", ui.logout, methods=["POST"]),
        Route(f"{UI_PATH}/search", ui.search, methods=["GET"]),
        Route(f"{UI_PATH}/memories", ui.memories, methods=["GET"]),
        Route(memory, ui.memory, methods=["GET"]),
        Route(f"{memory}/edit", ui.edit, methods=["POST"]),
        Route(f"{memory}/forget", ui.forget, methods=["POST"]),
        Route(f"{memory}/restore", ui.restore, methods=["POST"]),
        Route(f"{memory}/verify", ui.verify, methods=["POST"]),
        Mount(f"{UI_PATH}/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: ui.http_error, RearviewError: ui.rearview_error},
    )
    public_host = urlsplit(config.public_url).netloc if config.public_url else None
    guarded: ASGIApp = HostGuard(app, public_host) if loopback else app
    return SecurityHeaders(guarded)


def is_ui_path(path: str) -> bool:
    """Whether a request path belongs to the UI (`/ui` or below)."""
    return path == UI_PATH or path.startswith(UI_PATH + "/")

"""The ASGI app: MCP (stateless, JSON responses) at `/mcp`, behind tenant auth.

One app serves both `rearview serve` (uvicorn) and the Lambda handler. It answers 2025-era
clients (initialize handshake) and 2026-07-28 clients (no handshake) alike; GET and DELETE on
`/mcp` get 405 at once (stateless: no server-push stream, no session to delete).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from rearview import __version__
from rearview.api import tools
from rearview.api.access_log import AccessLog, quiet_library_loggers
from rearview.api.auth import METADATA_PATH, ApiKeyResolver, TenantAuth, TokenOrKeyResolver, TokenVerifier
from rearview.api.body_timeout import BODY_TIMEOUT_S, BodyTimeout
from rearview.api.courtesy import Courtesy, CourtesyScope
from rearview.api.errors import error_body
from rearview.api.fair_share import DEFAULT_FAIRNESS, Fairness
from rearview.api.origin import request_origin
from rearview.api.protocol import ProtocolChecks
from rearview.api.refusals import REFUSALS_PER_WINDOW, RefusedKeyLimiter
from rearview.api.request_ids import RequestIdGuard
from rearview.ports import CheckpointStore
from rearview.service.memory_service import MemoryService

MCP_PATH = "/mcp"
LOOPBACK = ("127.0.0.1", "localhost", "::1")

INSTRUCTIONS = (
    "Rearview is your long-term memory. Search it (memory_search) at the start of a task and before asking "
    "the user something they may have told you; write (memory_write) durable facts, preferences, decisions "
    "and lessons from failures. See the memory_guidelines prompt."
)


class MethodGuard:
    """Answer GET/DELETE on the MCP path with 405 instead of opening a stream that never ends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"].rstrip("/") == MCP_PATH
            and scope["method"] in ("GET", "DELETE")
        ):
            response = Response(
                error_body("method_not_allowed", "stateless server: POST JSON-RPC to /mcp"),
                status_code=405,
                headers={"Allow": "POST"},
                media_type="application/json",
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class RootGuide:
    """`GET /` before auth: a redirect to the memory browser when it is served, else where MCP is.

    A person who opens the server's address should not meet a 404 or a 401.
    The answer is the same for everyone and names nothing but paths, so it needs no key.
    """

    def __init__(self, app: ASGIApp, ui: bool) -> None:
        self.app = app
        self.ui = ui

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        response: Response
        if self.ui:
            response = RedirectResponse("/ui", status_code=302)
        else:
            response = PlainTextResponse(
                f"Rearview: an MCP server. Point your MCP client at {MCP_PATH} (POST JSON-RPC; "
                "Streamable HTTP). The memory browser at /ui is off on this server.\n"
            )
        await response(scope, receive, send)


def build_mcp(
    service: MemoryService,
    search_concurrency: int | None = None,
    fairness: Fairness = DEFAULT_FAIRNESS,
    courtesy: Courtesy | None = None,
    lanes: tools.Lanes | None = None,
) -> MCPServer[Any]:
    """The MCP server with Rearview's tools, prompt and resource.

    The tools run in `lanes`, by default new ones (`tools.Lanes`) of `search_concurrency` searches,
    each tenant's share from `fairness`, stepping aside for lighter tenants' requests counted in `courtesy`.
    """
    # subscriptions=False: a stateless JSON-response server holds no `subscriptions/listen` stream, and
    # the SDK derives the 2026-era `listChanged` / `resources.subscribe` flags from that method being
    # served; without it both eras advertise only what is answered.
    lanes = lanes or tools.Lanes.build(service, search_concurrency, fairness, courtesy)
    mcp: MCPServer[Any] = MCPServer(
        "rearview",
        instructions=INSTRUCTIONS,
        version=__version__,
        tools=tools.strict_tools(service, lanes=lanes),
        subscriptions=False,
    )
    tools.register(mcp, service, lanes)  # the resources (the listing too) in the tools' lanes
    mcp.middleware.append(ProtocolChecks(mcp))  # unknown names and cursors: -32602 (`rearview.api.protocol`)
    return mcp


def create_app(
    service: MemoryService,
    resolver: ApiKeyResolver,
    host: str = "127.0.0.1",
    public_url: str | None = None,
    authorization_server: str | None = None,
    token_verifier: TokenVerifier | None = None,
    trust_forwarded_headers: bool = False,
    ui: bool = False,
    ui_secret: str | None = None,
    refusals_per_minute: int = REFUSALS_PER_WINDOW,
    ui_revocations: CheckpointStore | None = None,
    forwarded_proxies: int = 1,
    body_timeout_s: float = BODY_TIMEOUT_S,
    search_concurrency: int | None = None,
    fairness: Fairness = DEFAULT_FAIRNESS,
) -> ASGIApp:
    """The complete ASGI app. `host` is where it is served: loopback enables DNS-rebinding protection.

    URLs handed out (metadata, 401) use `public_url`, else the request's origin, where the
    `X-Forwarded-Proto`/`X-Forwarded-Host` a proxy sets count only with `trust_forwarded_headers`.

    `authorization_server` (an OAuth/OIDC issuer) turns OAuth discovery on: the protected-resource
    metadata (RFC 9728) names it, and the 401 points at that metadata. API-key deployments leave it
    unset: no metadata is served and the 401 names no URL (`rearview.api.auth`). Where nothing in
    front verifies that issuer's tokens (`rearview serve`), `token_verifier` does: `/mcp` then
    accepts them beside `resolver`'s keys and refuses requests without a credential even when
    `resolver` is open (`auth.TokenOrKeyResolver`).

    `ui` serves the memory browser at `/ui` (`rearview.ui`), outside `TenantAuth`: it signs users
    in with an API key and keeps them signed in with a cookie signed by `ui_secret` (a random
    per-process secret when None: sessions then end on restart); a signed-in tenant's pages share
    its request rate, lanes and courtesy with its `/mcp` requests (`rearview.ui.tenant_share`);
    signing out revokes the session in `ui_revocations` (in this process only when None). Only
    `/ui` and paths below it reach the UI; everything else, `/mcp` included, still passes
    `TenantAuth`. The UI signs in with `resolver`'s keys only, never with tokens.

    `refusals_per_minute` refused keys from one address (on `/mcp` and the UI's sign-in together)
    answer it 429 for a while (`rearview.api.refusals`); 0 never does. With
    `trust_forwarded_headers`, the address is the `X-Forwarded-For` hop the `forwarded_proxies`
    trusted proxies in front appended (rightmost first), never one the client wrote.

    A request body must arrive within `body_timeout_s` of its first read (else 408); the limits on
    connections and request heads are the server's (`rearview.api.http_limits`).

    At most `search_concurrency` `memory_search` calls run at once, the rest queue (default: the
    CPU count; `rearview.api.tools.search_lane` says why). `fairness` is each tenant's share: its
    request rate on `/mcp` (over it: 429 before the body is read) and how many of its tool calls run
    at once, the rest waiting their turn tenant by tenant (`rearview.api.fair_share`); while a
    tenant's request is served, heavier tenants' calls step aside (`rearview.api.courtesy`).
    """
    courtesy = Courtesy()  # one per app: its requests and its lanes' calls (`rearview.api.courtesy`)
    lanes = tools.Lanes.build(service, search_concurrency, fairness, courtesy)  # /mcp's and the UI's
    rate = fairness.rate()  # one per app: /mcp and the UI together
    mcp = build_mcp(service, lanes=lanes)

    @mcp.custom_route("/healthz", methods=["GET"])  # type: ignore[untyped-decorator]
    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok", "version": __version__})

    async def protected_resource(request: Request) -> Response:
        base = public_url or request_origin(request.scope, request.headers, trust_forwarded_headers)
        return JSONResponse(
            {
                "resource": f"{base}{MCP_PATH}",
                "authorization_servers": [authorization_server],
                "bearer_methods_supported": ["header"],
                "resource_name": "Rearview memory",
            }
        )

    metadata_path = f"{METADATA_PATH}{MCP_PATH}" if authorization_server else None
    if metadata_path:  # RFC 9728's path-suffixed URL, and the root one older clients probe
        for path in (metadata_path, METADATA_PATH):
            mcp.custom_route(path, methods=["GET"])(protected_resource)

    security = None
    if host not in LOOPBACK:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # auth guards it instead
    starlette: Starlette = mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=security,
        host=host,
    )
    # behind auth: no body is read before the key is checked; a request is a visit once its body is read
    guarded = RequestIdGuard(CourtesyScope(starlette, courtesy, MCP_PATH), MCP_PATH)
    quiet_library_loggers()
    refusals = RefusedKeyLimiter(  # one per app: /mcp and the UI together
        refusals_per_minute or None, proxies=forwarded_proxies if trust_forwarded_headers else 0
    )
    callers = TokenOrKeyResolver(resolver, token_verifier) if token_verifier else resolver
    api: ASGIApp = MethodGuard(
        TenantAuth(guarded, callers, metadata_path, public_url, trust_forwarded_headers, refusals, rate)
    )
    if ui:
        from rearview.ui.app import build_ui
        from rearview.ui.browser import UiConfig
        from rearview.ui.session import SessionCodec, SessionRevocations
        from rearview.ui.tenant_share import TenantShare

        config = UiConfig(
            resolver, SessionCodec(ui_secret), public_url, trust_forwarded_headers, refusals,
            SessionRevocations(ui_revocations), TenantShare(lanes, rate),
        )  # fmt: skip
        api = UiDispatch(build_ui(service, config, loopback=host in LOOPBACK), api)
    return AccessLog(RootGuide(BodyTimeout(api, body_timeout_s), ui))  # a slow body is 408, logged


class UiDispatch:
    """Send HTTP requests for `/ui` and below to the UI app, everything else (lifespan too) to `api`."""

    def __init__(self, ui: ASGIApp, api: ASGIApp) -> None:
        self.ui = ui
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from rearview.ui.app import is_ui_path

        if scope["type"] == "http" and is_ui_path(scope["path"]):
            await self.ui(scope, receive, send)
            return
        await self.api(scope, receive, send)

"""Who is calling: API keys map to tenants; the tenant never comes from tool arguments.

`TenantAuth` is pure ASGI middleware. It resolves the caller's `Principal` from `Authorization:
Bearer <key>` (or `X-API-Key`) and stores its tenant in `scope["state"]["tenant_id"]` and, for a
key bound to an agent, that agent in `scope["state"]["agent_id"]`, where the tools read them
(`rearview.principal`). With no keys configured, every request is the default tenant (the local
server then binds to loopback only). Unauthenticated requests get 401 with a `WWW-Authenticate` header that
points at the protected-resource metadata (MCP authorization spec).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from rearview.api.errors import error_body
from rearview.api.origin import quoted_string, request_origin
from rearview.principal import Principal
from rearview.settings import hash_key

METADATA_PATH = "/.well-known/oauth-protected-resource"
PUBLIC_PATHS = frozenset({"/healthz", METADATA_PATH, f"{METADATA_PATH}/mcp"})
TENANT_STATE_KEY = "tenant_id"
AGENT_STATE_KEY = "agent_id"
"""The agent the credential is bound to, None when it is not bound."""


class ApiKeyResolver:
    """Hashed API key -> principal. Constant-time comparison against each stored hash."""

    def __init__(self, hashed_keys: Mapping[str, Principal], default_tenant: str | None) -> None:
        self._keys = dict(hashed_keys)
        self._default = Principal(default_tenant) if default_tenant else None

    @property
    def open(self) -> bool:
        """True when no keys are configured (single default tenant)."""
        return not self._keys

    def principal_for(self, presented: str | None) -> Principal | None:
        """Who a presented key authenticates, the default tenant (no agent) when open, else None."""
        if self.open:
            return self._default
        if not presented:
            return None
        digest = hash_key(presented)
        for stored, principal in self._keys.items():
            if hmac.compare_digest(stored, digest):
                return principal
        return None


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The credential in `Authorization: Bearer ...` or `X-API-Key`."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return headers.get("x-api-key") or None


class TenantAuth:
    """ASGI middleware: authenticate, then pass the tenant (and a bound agent) down in `scope["state"]`.

    The 401 points at `metadata_url` (from the configured public URL), else at the metadata on
    the request's origin (`origin.request_origin`; forwarded headers only if `trust_forwarded`).
    """

    def __init__(
        self,
        app: ASGIApp,
        resolver: ApiKeyResolver,
        metadata_url: str | None = None,
        trust_forwarded: bool = False,
    ) -> None:
        self.app = app
        self.resolver = resolver
        self.metadata_url = metadata_url
        self.trust_forwarded = trust_forwarded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        principal = self.resolver.principal_for(presented_key(headers))
        if principal is None:
            await self._unauthorized(scope, send, headers)
            return
        state = scope.setdefault("state", {})
        state[TENANT_STATE_KEY] = principal.tenant_id
        state[AGENT_STATE_KEY] = principal.agent_id
        await self.app(scope, receive, send)

    async def _unauthorized(self, scope: Scope, send: Send, headers: Mapping[str, str]) -> None:
        metadata = (
            self.metadata_url or f"{request_origin(scope, headers, self.trust_forwarded)}{METADATA_PATH}"
        )
        body = error_body("unauthorized", "missing or invalid API key")
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", f"Bearer resource_metadata={quoted_string(metadata)}".encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

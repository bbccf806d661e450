"""Who is calling: API keys map to tenants; the tenant never comes from tool arguments.

`TenantAuth` is pure ASGI middleware. It resolves the caller's `Principal` from `Authorization:
Bearer <key>` (or `X-API-Key`) and stores its tenant in `scope["state"]["tenant_id"]` and, for a
key bound to an agent, that agent in `scope["state"]["agent_id"]`, where the tools read them
(`rearview.shared.principal`). With no keys configured, every request is the default tenant (the local
server then binds to loopback only).

A client whose credentials keep being refused gets 429 with `Retry-After` for a while, whatever it
presents (`rearview.api.refusals`); so does a tenant over its request rate (`rearview.api.tenant_rate`),
checked before the request's body is read.

Where nothing in front verifies OAuth tokens (`rearview serve` with an issuer), `TokenOrKeyResolver`
accepts the issuer's bearer JWTs beside the API keys (`rearview.api.jwt_auth` verifies them): a
refused token is refused like a wrong key (401 `invalid_token`, counted); a token that cannot be
checked because the issuer's keys cannot be fetched is the server's failure (503), not counted.

Unauthenticated requests get 401 with an RFC 6750 `WWW-Authenticate: Bearer` challenge, shaped by
the deployment's mode so that an OAuth-capable client (Claude Code, the MCP Inspector, the SDKs)
does the right thing:

- API keys (no authorization server): `Bearer realm="rearview"`, plus `error="invalid_token"` when
  a credential was presented and refused (none when nothing was sent, RFC 6750 §3.1). No
  `resource_metadata`, and no metadata document is served: the MCP authorization spec requires
  one with `authorization_servers`, and one without sends clients into an OAuth flow that cannot
  succeed. Every `/.well-known/` path is public, so discovery probes get a plain 404, not a 401.
- OAuth/JWT (an authorization server is configured): the same, plus `resource_metadata` pointing
  at the RFC 9728 document at the path-suffixed well-known URL of the MCP endpoint
  (`/.well-known/oauth-protected-resource/mcp`), which names the issuer in `authorization_servers`.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from rearview.api.errors import error_body, error_kind
from rearview.api.origin import quoted_string, request_origin
from rearview.api.refusals import RefusedKeyLimiter, client_address
from rearview.api.tenant_rate import TenantRateLimiter
from rearview.config.settings import hash_key
from rearview.errors import BackendError
from rearview.shared.principal import Principal

METADATA_PATH = "/.well-known/oauth-protected-resource"
WELL_KNOWN = "/.well-known/"
PUBLIC_PATHS = frozenset({"/healthz"})
REALM = "rearview"
TENANT_STATE_KEY = "tenant_id"
AGENT_STATE_KEY = "agent_id"
"""The agent the credential is bound to, None when it is not bound."""
UNAVAILABLE_RETRY_S = 30
"""`Retry-After` of the 503 answered when a credential cannot be checked (the issuer is unreachable)."""
FINGERPRINT_CHARS = 24
"""Hex digits of a key's hash that name it in a browser session (96 bits)."""


class ApiKeyResolver:
    """Hashed API key -> principal. Constant-time comparison against each stored hash."""

    def __init__(self, hashed_keys: Mapping[str, Principal], default_tenant: str | None) -> None:
        self._keys = dict(hashed_keys)
        self._default = Principal(default_tenant) if default_tenant else None

    @property
    def open(self) -> bool:
        """True when no keys are configured (single default tenant)."""
        return not self._keys

    @property
    def verifies_credentials(self) -> bool:
        """Whether a presented credential is checked here (so can be guessed here, so is rate-limited)."""
        return True

    @property
    def may_block(self) -> bool:
        """Whether `principal_for` may wait on the network (`TenantAuth` then calls it off the event loop)."""
        return False

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

    def principal_for_fingerprint(self, fingerprint: str) -> Principal | None:
        """Who the configured key with this `key_fingerprint` authenticates, else None (also when open).

        For sessions that outlive the request that presented the key (the memory browser): a
        session names its key by fingerprint, and ends when that key is no longer configured.
        """
        if self.open or len(fingerprint) != FINGERPRINT_CHARS:
            return None
        for stored, principal in self._keys.items():
            if hmac.compare_digest(key_fingerprint(stored), fingerprint):
                return principal
        return None


class TokenVerifier(Protocol):
    """Checks a bearer token itself (signature, issuer, audience, expiry): `rearview.api.jwt_auth`."""

    def principal_for_token(self, token: str) -> Principal | None:
        """Who a valid token authenticates; None when it is refused.

        Raises `BackendError` when it cannot be checked now (the issuer's keys cannot be fetched).
        """
        ...


class TokenOrKeyResolver(ApiKeyResolver):
    """A configured API key's principal, else, for a JWT-shaped credential, the verified token's.

    Never open: with OAuth on, a request without a credential is refused even when no keys are
    configured. Sessions (`principal_for_fingerprint`) name API keys only: the memory browser signs
    in with keys, never with tokens.
    """

    def __init__(self, keys: ApiKeyResolver, verifier: TokenVerifier) -> None:
        super().__init__({}, default_tenant=None)
        self.keys = keys
        self.verifier = verifier

    @property
    def open(self) -> bool:
        return False

    @property
    def may_block(self) -> bool:
        """True: the issuer's keys are fetched at the first token and when they expire."""
        return True

    def principal_for(self, presented: str | None) -> Principal | None:
        if not presented:
            return None
        principal = None if self.keys.open else self.keys.principal_for(presented)
        if principal is None and presented.count(".") == JWT_DOTS:
            principal = self.verifier.principal_for_token(presented)
        return principal

    def principal_for_fingerprint(self, fingerprint: str) -> Principal | None:
        return self.keys.principal_for_fingerprint(fingerprint)


JWT_DOTS = 2
"""A compact JWS is three base64url parts joined by dots; anything else is not worth verifying."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a presented credential gets: its principal; None (refused); or, unchecked, `retry_after` > 0."""

    principal: Principal | None
    retry_after: int = 0


def authenticate(
    resolver: ApiKeyResolver, limiter: RefusedKeyLimiter, presented: str | None, client: str | None
) -> Verdict:
    """Who `presented` authenticates, as `client` (`refusals.client_address`) may ask now.

    A client locked out by `limiter` is answered without the key being checked; a refused key
    counts against it. `/mcp` (`TenantAuth`) and the memory browser's sign-in both come here.
    """
    if not resolver.verifies_credentials:  # a gateway authenticated the caller: nothing to guess here
        return Verdict(resolver.principal_for(presented))
    if presented and not resolver.open:
        wait = limiter.retry_after(client)
        if wait:
            return Verdict(None, wait)
    principal = resolver.principal_for(presented)
    if principal is None and presented:
        limiter.refused(client)
    return Verdict(principal)


def key_fingerprint(digest: str) -> str:
    """The first `FINGERPRINT_CHARS` hex digits of a stored `sha256:<hex>` key hash (names a key)."""
    return digest.removeprefix("sha256:").lower()[:FINGERPRINT_CHARS]


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The credential in `Authorization: Bearer ...` or `X-API-Key`."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return headers.get("x-api-key") or None


def bearer_challenge(resource_metadata: str | None, credential_presented: bool) -> str:
    """The 401's `WWW-Authenticate` value (RFC 6750 §3; `resource_metadata` from RFC 9728 §5.1)."""
    params = [f"realm={quoted_string(REALM)}"]
    if resource_metadata:
        params.append(f"resource_metadata={quoted_string(resource_metadata)}")
    if credential_presented:
        params.append('error="invalid_token"')
    return "Bearer " + ", ".join(params)


class TenantAuth:
    """ASGI middleware: authenticate, then pass the tenant (and a bound agent) down in `scope["state"]`.

    `metadata_path` is set only when OAuth is on (see the module docstring): then the 401 names
    that document under `public_url`, else under the request's origin (`origin.request_origin`;
    forwarded headers only if `trust_forwarded`). Without it (API keys) the 401 names no URL.
    `rate` (None: no limit) answers a tenant over its request rate 429 before the app runs.
    """

    def __init__(
        self,
        app: ASGIApp,
        resolver: ApiKeyResolver,
        metadata_path: str | None = None,
        public_url: str | None = None,
        trust_forwarded: bool = False,
        limiter: RefusedKeyLimiter | None = None,
        rate: TenantRateLimiter | None = None,
    ) -> None:
        self.app = app
        self.resolver = resolver
        self.metadata_path = metadata_path
        self.public_url = public_url
        self.trust_forwarded = trust_forwarded
        self.limiter = limiter or RefusedKeyLimiter()
        self.rate = rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _is_public(scope["path"]):
            await self.app(scope, receive, send)
            return
        repeated = _repeated_credential(scope["headers"])
        if repeated is not None:
            await _bad_request(send, f"send one {repeated} header, not several (which one counts?)")
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        presented = presented_key(headers)
        client = client_address(scope, self.limiter.proxies)
        try:
            if self.resolver.may_block:
                verdict = await run_in_threadpool(
                    authenticate, self.resolver, self.limiter, presented, client
                )
            else:
                verdict = authenticate(self.resolver, self.limiter, presented, client)
        except BackendError as exc:  # the credential could not be checked: not the client's fault
            await _unavailable(send, exc)
            return
        principal = verdict.principal
        if verdict.retry_after:
            await throttled(send, verdict.retry_after)
            return
        if principal is None:
            await self._unauthorized(scope, send, headers, presented is not None)
            return
        if self.rate is not None and (wait := self.rate.admit(principal.tenant_id)):
            if self.rate.hold_s:  # a flood that resends at once then costs one refusal a second
                await anyio.sleep(min(self.rate.hold_s, wait))
            await throttled(send, wait, f"this tenant is over its request rate: retry in {wait} s")
            return
        state = scope.setdefault("state", {})
        state[TENANT_STATE_KEY] = principal.tenant_id
        state[AGENT_STATE_KEY] = principal.agent_id
        await self.app(scope, receive, send)

    async def _unauthorized(
        self, scope: Scope, send: Send, headers: Mapping[str, str], presented: bool
    ) -> None:
        metadata = None
        if self.metadata_path:
            origin = self.public_url or request_origin(scope, headers, self.trust_forwarded)
            metadata = f"{origin}{self.metadata_path}"
        message = (
            "invalid credentials: the API key or token was not accepted"
            if presented
            else "credentials required: send 'Authorization: Bearer <API key or token>'"
        )
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", bearer_challenge(metadata, presented).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": error_body("unauthorized", message)})


async def throttled(send: Send, retry_after: int, message: str | None = None) -> None:
    """429 `rate_limited` with `Retry-After`: by default, this client's credentials are refused unchecked."""
    message = message or f"too many refused credentials from this address: retry in {retry_after} s"
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [(b"content-type", b"application/json"), (b"retry-after", str(retry_after).encode())],
        }
    )
    await send({"type": "http.response.body", "body": error_body("rate_limited", message)})


_CREDENTIAL_HEADERS = {b"authorization": "Authorization", b"x-api-key": "X-API-Key"}


def _repeated_credential(raw_headers: list[tuple[bytes, bytes]]) -> str | None:
    """The name of a credential header the request carries more than once, if any.

    Proxies and frameworks disagree on which copy wins; a request that is ambiguous about who
    it is gets refused rather than resolved one way here and another way in a log or a proxy.
    """
    seen: set[bytes] = set()
    for name, _ in raw_headers:
        lowered = name.lower()
        if lowered in _CREDENTIAL_HEADERS:
            if lowered in seen:
                return _CREDENTIAL_HEADERS[lowered]
            seen.add(lowered)
    return None


async def _unavailable(send: Send, exc: BackendError) -> None:
    kind = error_kind(exc)
    await send(
        {
            "type": "http.response.start",
            "status": kind.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"retry-after", str(UNAVAILABLE_RETRY_S).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": error_body(kind.kind, str(exc))})


async def _bad_request(send: Send, message: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": error_body("invalid_request", message)})


def _is_public(path: str) -> bool:
    """Health and every well-known document: discovery probes get the document or a plain 404."""
    return path in PUBLIC_PATHS or path.startswith(WELL_KNOWN)

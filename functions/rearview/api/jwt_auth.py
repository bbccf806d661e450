"""Bearer JWTs verified in process: `rearview serve` with `REARVIEW_JWT_ISSUER`, nothing in front.

On Lambda, API Gateway's JWT authorizer checks the token and the handler only reads its claims
(`rearview.api.lambda_auth`). `rearview serve` has no authorizer, and advertising an issuer (the
protected-resource metadata's `authorization_servers`) while refusing its tokens sends OAuth
clients into a flow that cannot succeed; so with an issuer set, `JwtVerifier` checks each token:

- the signature, with a key from the issuer's JWKS: `REARVIEW_JWT_JWKS_URL`, else the `jwks_uri`
  of `{issuer}/.well-known/openid-configuration` (OIDC discovery). Nothing is fetched before the
  first token; PyJWT's `PyJWKClient` then caches the key set for `JWKS_LIFESPAN_S` and re-fetches
  it early for an unknown `kid` (a rotated key), at most once per its cooldown. Asymmetric
  algorithms only (`ALGORITHMS`): never `none`, never HS* (a public key is no HMAC secret);
- `iss` equal to the issuer, `exp` present and not past (`LEEWAY_S` of clock skew), and, with
  `REARVIEW_JWT_AUDIENCE`, `aud` naming it;
- the tenant (and agent) claims, read as on Lambda (`ClaimSettings`, `principal_from_token`).

A token that fails any check is refused (None): the caller gets 401 `invalid_token`, counted by
the refusal limiter, exactly like a wrong API key (`rearview.api.auth.TokenOrKeyResolver`). An
issuer whose keys cannot be fetched is `BackendError` (503, not counted): the caller is not at fault.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import threading
import time
import urllib.request
from typing import Any, Final
from urllib.parse import urlparse

import jwt
from jwt import PyJWK, PyJWKClient
from jwt.exceptions import PyJWKClientConnectionError, PyJWKClientError, PyJWKSetError

from rearview.config.settings import Settings
from rearview.errors import BackendError, ConfigurationError
from rearview.shared.principal import Principal, principal_from_token

__all__ = ["ALGORITHMS", "JwtVerifier"]

log = logging.getLogger(__name__)

ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""The signature algorithms a token may use: public-key ones only."""
DISCOVERY_PATH: Final = "/.well-known/openid-configuration"
FETCH_TIMEOUT_S: Final = 5.0
"""Longest wait for the discovery document or the JWKS (the request waits with it)."""
JWKS_LIFESPAN_S: Final = 300.0
"""The key set is re-fetched when older than this: a key the issuer withdrew stops working then."""
DISCOVERY_RETRY_S: Final = 10.0
"""After a failed discovery, tokens are answered 503 at once for this long before it is tried again."""
LEEWAY_S: Final = 30
"""Clock skew tolerated on `exp`, `nbf` and `iat`."""


class JwtVerifier:
    """Bearer JWT -> principal (`rearview.api.auth.TokenVerifier`). The constructor does no I/O.

    Raises `ConfigurationError` naming the variable when the issuer or the JWKS URL is not an
    http(s) URL. Safe to call from several threads at once.
    """

    def __init__(
        self,
        issuer: str,
        audience: str | None = None,
        jwks_url: str | None = None,
        tenant_claim: str = "sub",
        agent_claim: str | None = None,
    ) -> None:
        self.issuer = _http_url("REARVIEW_JWT_ISSUER", issuer)
        self.audience = audience
        self.jwks_url = _http_url("REARVIEW_JWT_JWKS_URL", jwks_url) if jwks_url else None
        self.tenant_claim = tenant_claim
        self.agent_claim = agent_claim
        self._client: PyJWKClient | None = None
        self._lock = threading.Lock()
        self._retry_at = -math.inf
        self._failure = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> JwtVerifier | None:
        """The verifier `settings` ask for (`jwt_*`, `*_claim`); None without an issuer."""
        if not settings.jwt_issuer:
            return None
        return cls(
            settings.jwt_issuer,
            audience=settings.jwt_audience,
            jwks_url=settings.jwt_jwks_url,
            tenant_claim=settings.tenant_claim,
            agent_claim=settings.agent_claim,
        )

    def principal_for_token(self, token: str) -> Principal | None:
        """Who a valid token authenticates; None (logged with the reason) when any check fails.

        Raises `BackendError` when the issuer's keys cannot be fetched (discovery or JWKS).
        """
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            return _refused(f"not a JWT ({exc})")
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGORITHMS:
            return _refused(f"algorithm {alg!r} is not accepted (allowed: {', '.join(ALGORITHMS)})")
        if not isinstance(kid, str):
            return _refused("no `kid` in the header: the JWKS key cannot be chosen")
        try:
            claims = jwt.decode(
                token,
                self._signing_key(kid).key,
                algorithms=[alg],
                issuer=self.issuer,
                audience=self.audience,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss"], "verify_aud": self.audience is not None},
            )
        except jwt.PyJWTError as exc:
            return _refused(str(exc))
        principal = principal_from_token(claims, self.tenant_claim, self.agent_claim)
        if principal is None:
            wanted = self.tenant_claim + (f" and {self.agent_claim}" if self.agent_claim else "")
            return _refused(f"no usable {wanted} claim (a non-blank string of at most 256 characters)")
        return principal

    def _signing_key(self, kid: str) -> PyJWK:
        """The issuer's key `kid`; `PyJWKClientError` (refused) when the issuer has no such key."""
        client = self._keys()
        try:
            keys = client.get_signing_keys()  # the cached set, fetched when missing or expired
        except (PyJWKClientError, PyJWKSetError) as exc:
            raise BackendError(f"the signing keys of {self.issuer} cannot be fetched ({exc})") from exc
        key = client.match_kid(keys, kid)
        if key is not None:
            return key
        try:
            return client.get_signing_key(kid)  # re-fetched at most once per cooldown: a key just rotated in
        except PyJWKClientConnectionError as exc:
            raise BackendError(f"the signing keys of {self.issuer} cannot be fetched ({exc})") from exc

    def _keys(self) -> PyJWKClient:
        """The JWKS client, its URL discovered at the first call (retried after `DISCOVERY_RETRY_S`)."""
        with self._lock:
            if self._client is None:
                if time.monotonic() < self._retry_at:
                    raise BackendError(self._failure)
                try:
                    url = self.jwks_url or self._discover()
                except BackendError as exc:
                    self._retry_at, self._failure = time.monotonic() + DISCOVERY_RETRY_S, str(exc)
                    raise
                self._client = PyJWKClient(url, lifespan=JWKS_LIFESPAN_S, timeout=FETCH_TIMEOUT_S)
            return self._client

    def _discover(self) -> str:
        """The `jwks_uri` of the issuer's OIDC discovery document, which must name this very issuer."""
        url = self.issuer.rstrip("/") + DISCOVERY_PATH
        hint = "or set REARVIEW_JWT_JWKS_URL"
        try:
            with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as response:  # noqa: S310 - http(s), checked
                document: Any = json.load(response)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise BackendError(f"OIDC discovery at {url} failed ({exc}); check the issuer {hint}") from exc
        if not isinstance(document, dict):
            raise BackendError(f"OIDC discovery at {url} did not return a JSON object; {hint}")
        if document.get("issuer") != self.issuer:
            raise BackendError(
                f"OIDC discovery at {url} names issuer {document.get('issuer')!r}, not REARVIEW_JWT_ISSUER"
                f" {self.issuer!r}: set the issuer exactly as the tokens' `iss` spells it"
            )
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not _is_http(jwks_uri):
            raise BackendError(f"OIDC discovery at {url} has no http(s) `jwks_uri`; {hint}")
        return jwks_uri


def _refused(reason: str) -> Principal | None:
    """None, the refusal, logged with its reason (never the token)."""
    log.info("bearer token refused: %s", reason)
    return None


def _is_http(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc)


def _http_url(setting: str, value: str) -> str:
    if not _is_http(value):
        raise ConfigurationError(setting, f"must be an http(s) URL, got {value!r}")
    return value

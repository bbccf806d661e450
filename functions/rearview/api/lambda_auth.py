"""Who is calling, when Rearview runs in AWS Lambda behind API Gateway or a Function URL.

Two modes, chosen by `REARVIEW_AUTH_MODE` (read once into `LambdaAuthSettings`):

- `apikey` (default): the caller presents an API key (`Authorization: Bearer <key>` or
  `X-API-Key`). Keys are stored *hashed* (`sha256:<hex>`, see `rearview.config.settings.hash_key`) as a
  JSON object `{"sha256:...": "<tenant>"}` (or, for a key bound to an agent,
  `{"sha256:...": {"tenant": "<tenant>", "agent": "<agent>"}}`) in an SSM SecureString parameter
  (`REARVIEW_API_KEYS_PARAMETER`), a Secrets Manager secret (`REARVIEW_API_KEYS_SECRET`) or, for
  tests and `sam local`, the environment (`REARVIEW_API_KEYS_JSON`). They are fetched once at
  init through Powertools Parameters, whose cache re-fetches them when older than
  `REARVIEW_API_KEYS_MAX_AGE_S` seconds, so a revoked key stops working without a deploy.
- `jwt`: API Gateway's JWT authorizer has already validated the bearer token; the tenant is the
  value of one claim (`REARVIEW_TENANT_CLAIM`, default `sub`) of
  `requestContext.authorizer.jwt.claims`; with `REARVIEW_AGENT_CLAIM` set, the token is also
  bound to the agent in that claim (and refused without it). The Lambda adapter puts that
  principal into `gateway_principal` (a context variable) for the duration of one request;
  nothing a client sends can set it.

Both resolvers plug into the existing `TenantAuth` middleware (they are `ApiKeyResolver`s) and
fail closed: with no keys configured, or no claim on the event, every request gets 401 with the
`WWW-Authenticate` header. Unlike the local server, an empty key set never means "open".
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from rearview.api.auth import ApiKeyResolver
from rearview.config.settings import ClaimSettings
from rearview.errors import ConfigurationError
from rearview.shared.principal import Principal, principal_from_entry, principal_from_token

__all__ = [
    "AuthMode",
    "ClaimsTenantResolver",
    "LambdaAuthSettings",
    "RefreshingKeyResolver",
    "authenticated_principal",
    "build_resolver",
    "gateway_principal",
    "parse_key_map",
    "principal_from_claims",
]

log = logging.getLogger(__name__)

AuthMode = Literal["apikey", "jwt"]
HASH_PREFIX = "sha256:"

gateway_principal: ContextVar[Principal | None] = ContextVar("rearview_gateway_principal", default=None)
"""The principal API Gateway authenticated for the request being served (jwt mode), else None."""


class LambdaAuthSettings(ClaimSettings):
    """How the Lambda function authenticates callers (environment variables `REARVIEW_*`).

    In jwt mode the token's claims name the caller as `ClaimSettings` says (`tenant_claim`,
    `agent_claim`), the same settings `rearview serve` reads.
    """

    model_config = SettingsConfigDict(env_prefix="REARVIEW_", extra="ignore")

    auth_mode: AuthMode = "apikey"
    api_keys_json: SecretStr | None = None
    """Inline `{"sha256:<hex>": "<tenant>" | {"tenant": ..., "agent": ...}}` (tests, `sam local invoke`);
    wins over the others."""
    api_keys_parameter: str | None = None
    """Name of an SSM SecureString parameter holding the JSON key map."""
    api_keys_secret: str | None = None
    """Id or ARN of a Secrets Manager secret holding the JSON key map."""
    api_keys_max_age_s: float = Field(default=300.0, ge=0)
    """Re-fetch the key map when it is older than this (0: never re-fetch)."""

    @field_validator("api_keys_json", "api_keys_parameter", "api_keys_secret", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """The template declares these variables with "" when unused (so `sam local` can override them)."""
        return None if isinstance(value, str) and not value.strip() else value


def parse_key_map(raw: str, source: str) -> dict[str, Principal]:
    """Validate a JSON key map: every key a `sha256:<64 hex>` digest, every value a principal.

    A value is a tenant id or a `{"tenant": ..., "agent": ...}` object (`principal_from_entry`).
    Plain-text keys are refused (they must never be stored); the error names the source, never a key.
    """
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(source, f"is not valid JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(source, 'must be a JSON object {"sha256:<hex>": "<tenant>"}')
    keys: dict[str, Principal] = {}
    for position, (digest, entry) in enumerate(data.items(), start=1):
        if not _is_digest(digest):
            raise ConfigurationError(
                source, f"entry {position} is not a sha256:<64 hex> digest (store hashed keys only)"
            )
        principal = principal_from_entry(entry)
        if principal is None:
            raise ConfigurationError(
                source, f'entry {position} must map to a tenant id or {{"tenant": ..., "agent": ...}}'
            )
        keys[digest.lower()] = principal
    return keys


def _is_digest(value: str) -> bool:
    hexpart = value[len(HASH_PREFIX) :]
    return (
        value.lower().startswith(HASH_PREFIX)
        and len(hexpart) == 64
        and all(c in "0123456789abcdef" for c in hexpart.lower())
    )


KeyMapReader = Callable[[bool], str]
"""Reads the raw JSON key map; `True` bypasses the reader's cache. Raises `ConfigurationError`."""


class RefreshingKeyResolver(ApiKeyResolver):
    """Hashed API key -> principal, from a key map `read` on every request through its cache.

    Freshness is the reader's (Powertools Parameters caches the SSM or Secrets Manager value for
    `REARVIEW_API_KEYS_MAX_AGE_S`); the map is re-parsed only when its text changed. Never open:
    with no reader, or nothing read yet, every key is refused. A failed read or a malformed new map
    keeps the previous keys (logged), so an SSM hiccup does not lock every caller out; Powertools
    does not cache a failure, so the next read is attempted only after `retry_after_s`.
    """

    def __init__(
        self,
        read: KeyMapReader | None = None,
        source: str = "key map",
        retry_after_s: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__({}, default_tenant=None)
        self._read = read
        self._source = source
        self._inner = ApiKeyResolver({}, default_tenant=None)
        self._raw: str | None = None
        self._force = False
        self._retry_after_s = retry_after_s
        self._monotonic = monotonic
        self._retry_at = float("-inf")

    @property
    def open(self) -> bool:
        """Always False: Lambda never serves an unauthenticated default tenant."""
        return False

    def load(self) -> RefreshingKeyResolver:
        """Read and parse the key map now (at init); raises `ConfigurationError` when it cannot."""
        if self._read is not None:
            self._apply(self._read(True))
        return self

    def expire(self) -> None:
        """Bypass the cache on the next request (after a SnapStart restore: the snapshot's may be old)."""
        self._force = True
        self._retry_at = float("-inf")

    def principal_for(self, presented: str | None) -> Principal | None:
        """Who a presented key authenticates, or None (also when no keys are configured)."""
        self._refresh()
        if self._inner.open or not presented:
            return None
        return self._inner.principal_for(presented)

    def principal_for_fingerprint(self, fingerprint: str) -> Principal | None:
        """Who the configured key with this fingerprint authenticates (after a refresh), else None."""
        self._refresh()
        return None if self._inner.open else self._inner.principal_for_fingerprint(fingerprint)

    def _refresh(self) -> None:
        if self._read is None or self._monotonic() < self._retry_at:
            return
        force, self._force = self._force, False
        try:
            self._apply(self._read(force))
        except ConfigurationError:  # keep serving with the previous keys; retried after a pause
            log.exception("refreshing the API key map failed; keeping the previous keys")
            self._retry_at = self._monotonic() + self._retry_after_s

    def _apply(self, raw: str) -> None:
        if raw != self._raw:
            self._inner = ApiKeyResolver(parse_key_map(raw, self._source), default_tenant=None)
            self._raw = raw


class ClaimsTenantResolver(ApiKeyResolver):
    """The principal API Gateway's JWT authorizer established for this request (`gateway_principal`).

    The presented bearer token itself is ignored here: API Gateway validated it (signature,
    issuer, audience, expiry) before the function was invoked.
    """

    def __init__(self) -> None:
        super().__init__({}, default_tenant=None)

    @property
    def open(self) -> bool:
        return False

    @property
    def verifies_credentials(self) -> bool:
        """No: API Gateway validated the token; a refusal here is a missing claim, not a guess."""
        return False

    def principal_for(self, presented: str | None) -> Principal | None:
        return gateway_principal.get()


def principal_from_claims(
    event: Mapping[str, Any], tenant_claim: str, agent_claim: str | None = None
) -> Principal | None:
    """The principal in `requestContext.authorizer.jwt.claims` of an HTTP API event, if usable.

    The claims are read as `rearview serve` reads a token it verified itself
    (`rearview.shared.principal.principal_from_token`).
    """
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    jwt = authorizer.get("jwt") if isinstance(authorizer, Mapping) else None
    claims = jwt.get("claims") if isinstance(jwt, Mapping) else None
    return principal_from_token(claims, tenant_claim, agent_claim) if isinstance(claims, Mapping) else None


@contextmanager
def authenticated_principal(principal: Principal | None) -> Iterator[None]:
    """Set `gateway_principal` for the code (and the tasks it creates) inside the block."""
    token = gateway_principal.set(principal)
    try:
        yield
    finally:
        gateway_principal.reset(token)


def build_resolver(settings: LambdaAuthSettings, region: str | None = None) -> ApiKeyResolver:
    """The resolver for the configured mode; in apikey mode this fetches the key map (network I/O).

    Raises ConfigurationError when the key map cannot be read or is malformed (the function's init
    then fails loudly, and its error alarm fires). No configured source is not an error: the
    resolver then refuses every key, and a warning says why.
    """
    if settings.auth_mode == "jwt":
        return ClaimsTenantResolver()
    if settings.api_keys_json is not None:
        raw = settings.api_keys_json.get_secret_value()
        return RefreshingKeyResolver(lambda _force: raw, "REARVIEW_API_KEYS_JSON").load()
    if settings.api_keys_parameter or settings.api_keys_secret:
        read, source = _stored_key_map(settings, region)
        return RefreshingKeyResolver(read, source, retry_after_s=settings.api_keys_max_age_s or 60.0).load()
    log.warning(
        "no API keys configured (REARVIEW_API_KEYS_PARAMETER, REARVIEW_API_KEYS_SECRET or "
        "REARVIEW_API_KEYS_JSON): every request will be refused with 401"
    )
    return RefreshingKeyResolver()


NEVER_EXPIRES_S: Final = 10 * 365 * 24 * 3600
"""Powertools' `max_age` for `REARVIEW_API_KEYS_MAX_AGE_S=0` ("never re-fetch")."""


def _stored_key_map(settings: LambdaAuthSettings, region: str | None) -> tuple[KeyMapReader, str]:
    """A reader of the SSM parameter or the secret, cached by Powertools Parameters, and its name.

    Powertools (and boto3) are imported here, not at module load: jwt mode and inline keys never
    need them. One provider per resolver, so its cache is not shared with other code in the process.
    """
    from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider
    from botocore.config import Config

    config = Config(region_name=region)
    max_age = math.ceil(settings.api_keys_max_age_s) or NEVER_EXPIRES_S
    if settings.api_keys_parameter:
        name, setting = settings.api_keys_parameter, "REARVIEW_API_KEYS_PARAMETER"
        ssm = SSMProvider(boto_config=config)

        def read(force: bool) -> str:
            with _read_errors(setting, name):
                return str(ssm.get(name, max_age=max_age, force_fetch=force, decrypt=True))

        return read, f"SSM parameter {name}"
    secret_id, setting = str(settings.api_keys_secret), "REARVIEW_API_KEYS_SECRET"
    secrets = SecretsProvider(boto_config=config)

    def read_secret(force: bool) -> str:
        with _read_errors(setting, secret_id):
            return str(secrets.get(secret_id, max_age=max_age, force_fetch=force))

    return read_secret, f"secret {secret_id}"


@contextmanager
def _read_errors(setting: str, name: str) -> Iterator[None]:
    """A failed read of the key map becomes one clear configuration error (raised at init).

    Powertools wraps every SDK error in `GetParameterError` (without `from`): the SDK error is its
    `__context__`, where the AWS error code is.
    """
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
    from botocore.exceptions import ClientError

    try:
        yield
    except GetParameterError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ClientError):
            reason = str(cause.response.get("Error", {}).get("Code", "error"))
        else:
            reason = type(cause or exc).__name__
        raise ConfigurationError(setting, f"{name} cannot be read ({reason})") from exc

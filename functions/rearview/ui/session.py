"""The browser session: a signed cookie naming the tenant, the bound agent and the key's fingerprint.

The cookie value is `base64url(payload) "." base64url(HMAC-SHA256(secret, payload))`, where the
payload is compact JSON `{"t": tenant, "a": agent|null, "k": fingerprint, "e": expiry (unix s),
"c": csrf seed}`. It never holds the key: the fingerprint is a prefix of the key's stored
SHA-256 hash (`ApiKeyResolver.fingerprint`), and each request checks that a configured key still
has it and still maps to the same tenant and agent, so revoking or remapping a key ends its
sessions at once.

Signing out revokes the session server-side (`SessionRevocations`): the cookie value a browser,
a proxy log or a stolen copy still holds no longer signs in, for the rest of its lifetime too.

The secret comes from `REARVIEW_UI_SECRET` (settings `ui_secret`); without one a random secret is
drawn per process, so every session ends when the server restarts (and, on Lambda, would not be
shared between instances: the template passes a secret there).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

from rearview.api.auth import ApiKeyResolver
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.errors import ConfigurationError
from rearview.ports import CheckpointStore
from rearview.shared.principal import Principal

UI_PATH = "/ui"
"""Where the memory browser is served."""
COOKIE_NAME = "rearview_ui"
COOKIE_PATH = UI_PATH
SESSION_TTL_S = 8 * 3600
"""How long a sign-in lasts."""
MIN_SECRET_BYTES = 16


@dataclass(frozen=True, slots=True)
class Session:
    """Who is signed in. `open` sessions (no keys configured) need no cookie and cannot sign out."""

    tenant_id: str
    agent_id: str | None
    fingerprint: str
    expires_at: int
    csrf_seed: str
    open: bool = False


class SessionCodec:
    """Signs and verifies session cookies with one secret (see the module docstring)."""

    def __init__(self, secret: str | bytes | None = None) -> None:
        if secret is None:
            key = secrets.token_bytes(32)
        else:
            key = secret.encode() if isinstance(secret, str) else secret
        if len(key) < MIN_SECRET_BYTES:
            raise ConfigurationError("ui_secret", f"must be at least {MIN_SECRET_BYTES} bytes long")
        self._key = hashlib.sha256(b"rearview-ui-session|" + key).digest()

    def mac(self, message: bytes) -> bytes:
        """HMAC-SHA256 of `message` under this codec's key (also the CSRF tokens' MAC)."""
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def issue(self, principal: Principal, fingerprint: str, now: int) -> tuple[Session, str]:
        """A new session for `principal` (signed in with the key of `fingerprint`) and its cookie value."""
        session = Session(
            tenant_id=principal.tenant_id,
            agent_id=principal.agent_id,
            fingerprint=fingerprint,
            expires_at=now + SESSION_TTL_S,
            csrf_seed=secrets.token_urlsafe(16),
        )
        payload = {
            "t": session.tenant_id,
            "a": session.agent_id,
            "k": session.fingerprint,
            "e": session.expires_at,
            "c": session.csrf_seed,
        }
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=True).encode()
        return session, f"{_b64(body)}.{_b64(self.mac(body))}"

    def verify(self, cookie: str | None, resolver: ApiKeyResolver, now: int) -> Session | None:
        """The session in `cookie` if its signature holds, it has not expired and its key is still valid."""
        session = self._decode(cookie, now)
        if session is None:
            return None
        current = resolver.principal_for_fingerprint(session.fingerprint)
        if current != Principal(session.tenant_id, session.agent_id):
            return None
        return session

    def _decode(self, cookie: str | None, now: int) -> Session | None:
        if not cookie or cookie.count(".") != 1:
            return None
        body_text, mac_text = cookie.split(".")
        try:
            body = _unb64(body_text)
        except (ValueError, binascii.Error):
            return None
        # Compared as text: base64 decoding ignores a last character's spare bits, so comparing
        # decoded bytes would accept several spellings of one signature.
        if not hmac.compare_digest(mac_text.encode(), _b64(self.mac(body)).encode()):
            return None
        try:
            data = json.loads(body)
            session = Session(
                tenant_id=str(data["t"]),
                agent_id=None if data["a"] is None else str(data["a"]),
                fingerprint=str(data["k"]),
                expires_at=int(data["e"]),
                csrf_seed=str(data["c"]),
            )
        except (ValueError, KeyError, TypeError):
            return None
        return session if session.expires_at > now else None


class SessionRevocations:
    """Sessions signed out before they expired, where every server instance reads them.

    Kept in a `CheckpointStore` (the lifecycle jobs' store: a SQLite file beside the data, or the
    DynamoDB table), one entry per signed-out session under the session's tenant, named by a hash
    of its random CSRF seed (never the seed itself) and holding its expiry. Without a store,
    revocations live in this process only (enough when sessions end with it: no `ui_secret`).
    """

    _PREFIX = "ui-signed-out/"

    def __init__(self, store: CheckpointStore | None = None) -> None:
        self._store = store if store is not None else InMemoryCheckpointStore()

    def revoke(self, session: Session) -> None:
        """Make `session` invalid from now on (idempotent)."""
        self._store.save(session.tenant_id, self._name(session), str(session.expires_at))

    def revoked(self, session: Session) -> bool:
        """Whether `session` was signed out."""
        return self._store.load(session.tenant_id, self._name(session)) is not None

    def _name(self, session: Session) -> str:
        return self._PREFIX + hashlib.sha256(session.csrf_seed.encode()).hexdigest()


def open_session(tenant_id: str) -> Session:
    """The session of an open (no keys, loopback) server: the default tenant, no agent binding."""
    return Session(tenant_id, None, "", expires_at=2**62, csrf_seed="open", open=True)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

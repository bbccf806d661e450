"""CSRF defence for the UI's forms: a per-session token, and no POST from a foreign origin.

The token is HMAC(secret, "csrf|" + the session's csrf seed): it changes with each sign-in, is
never stored server-side, and is compared in constant time. A POST is also refused when it
carries an `Origin` that is not this server's (`same_origin`); browsers send `Origin` on every
cross-site POST, so a forged form fails on both counts. The session cookie is SameSite=Strict too.
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Iterable
from urllib.parse import urlsplit

from rearview.ui.session import Session, SessionCodec

FIELD = "csrf_token"


def token(codec: SessionCodec, session: Session) -> str:
    """The CSRF token of `session`'s forms."""
    return base64.urlsafe_b64encode(codec.mac(b"csrf|" + session.csrf_seed.encode())).rstrip(b"=").decode()


def valid_token(codec: SessionCodec, session: Session, presented: str | None) -> bool:
    """Whether `presented` is `session`'s token (constant-time)."""
    return bool(presented) and hmac.compare_digest(str(presented).encode(), token(codec, session).encode())


def same_origin(origin: str | None, hosts: Iterable[str]) -> bool:
    """True when there is no `Origin` (same-origin navigation by older browsers) or it names one of `hosts`.

    `hosts` are the `host[:port]` values this server answers as (its `Host`, its public URL's).
    `Origin: null` (sandboxed frames, some redirects) is refused.
    """
    if origin is None:
        return True
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    return parts.netloc.lower() in {h.lower() for h in hosts}

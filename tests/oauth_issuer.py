"""A local OAuth/OIDC issuer for tests: an RSA key, its JWKS and discovery document over HTTP, and tokens.

`LocalIssuer` serves `/.well-known/openid-configuration` (naming `/jwks.json` as its `jwks_uri`)
and the JWKS from a `http.server` thread on a loopback port; `token()` signs JWTs with its key.
`requests` counts the documents fetched, so tests can see what the server under test asked for.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

KID = "test-key-1"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class LocalIssuer:
    """An issuer at `url` whose JWKS holds the public half of `key` (kid `KID`)."""

    def __init__(self) -> None:
        self.key = new_key()
        self.url = ""
        self.requests: list[str] = []
        self.down = False
        """While True, every document is answered 503 (the issuer is unreachable)."""

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks.json"

    def jwks(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": KID, "use": "sig", "alg": "RS256"}]}

    def token(
        self,
        sub: str = "alice",
        *,
        key: rsa.RSAPrivateKey | None = None,
        algorithm: str = "RS256",
        lifetime_s: float = 300,
        **claims: Any,
    ) -> str:
        """A JWT from this issuer for `sub`; `claims` add or override (`iss`, `aud`, `exp`, ...)."""
        now = int(time.time())
        payload = {"iss": self.url, "sub": sub, "iat": now, "exp": now + int(lifetime_s), **claims}
        return jwt.encode(payload, key or self.key, algorithm=algorithm, headers={"kid": KID})

    def _document(self, path: str) -> dict[str, Any] | None:
        if path == "/.well-known/openid-configuration":
            return {"issuer": self.url, "jwks_uri": self.jwks_url, "response_types_supported": ["code"]}
        if path == "/jwks.json":
            return self.jwks()
        return None


@contextmanager
def local_issuer() -> Iterator[LocalIssuer]:
    """Serve a `LocalIssuer` on a free loopback port for the block."""
    issuer = LocalIssuer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            issuer.requests.append(self.path)
            document = None if issuer.down else issuer._document(self.path)
            body = json.dumps(document or {"error": "unavailable" if issuer.down else "not_found"}).encode()
            self.send_response(200 if document else 503 if issuer.down else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

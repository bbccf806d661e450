"""Where clients reach this server (`scheme://host[:port]`), for URLs the server hands out.

The protected-resource metadata and the 401's `WWW-Authenticate` name URLs on this server. The
configured public URL wins; without one the origin is the host and port the server is bound to,
and a request is hostile input: its `Host` is used only when the deployment trusts request
headers (`REARVIEW_TRUST_FORWARDED_HEADERS`, which also admits `X-Forwarded-Proto/Host`) or when
the server is bound to a wildcard address (0.0.0.0, ::) and so has no name of its own; even then
only a well-formed value (a scheme of http/https, a strict `host[:port]`) is used. Values put
into a header parameter are quoted-string escaped. Behind a proxy or a DNS name, set
`REARVIEW_PUBLIC_URL`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from starlette.types import Scope

SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - names to recognize, not to bind

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{{1,5}})?")
"""A DNS name, IPv4 address or bracketed IPv6 address, with an optional port; nothing else."""


def valid_host(value: str | None) -> str | None:
    """`value` if it is a strict `host[:port]`, else None."""
    return value if value is not None and _HOST.fullmatch(value) else None


def request_origin(scope: Scope, headers: Mapping[str, str], trust_forwarded: bool) -> str:
    """`scheme://host[:port]` of an ASGI request (see the module docstring for what is trusted)."""
    scheme = str(scope.get("scheme", "http"))
    host = valid_host(headers.get("host")) if trust_forwarded or _bound_to_wildcard(scope) else None
    if trust_forwarded:
        scheme = _first(headers.get("x-forwarded-proto")).lower() or scheme
        host = valid_host(_first(headers.get("x-forwarded-host"))) or host
    if scheme not in SCHEMES:
        scheme = "http"
    return f"{scheme}://{host or _bound_host(scope, scheme)}"


def quoted_string(value: str) -> str:
    """`value` as an HTTP quoted-string (RFC 9110 §5.6.4): quotes escaped, control characters dropped."""
    escaped = "".join(c for c in value if c == "\t" or " " <= c != "\x7f")
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _first(value: str | None) -> str:
    """The first of a comma-separated forwarded header's values (the client-facing proxy's)."""
    return (value or "").split(",", 1)[0].strip()


def _bound_to_wildcard(scope: Scope) -> bool:
    server = scope.get("server")
    return not server or str(server[0]) in WILDCARD_HOSTS


def _bound_host(scope: Scope, scheme: str) -> str:
    """The host and port the server is bound to (ASGI `server`), else `localhost`."""
    server = scope.get("server")
    if not server:
        return "localhost"
    name, port = str(server[0]), server[1]
    name = f"[{name}]" if ":" in name else name
    if valid_host(name) is None:
        return "localhost"
    if port is None or port == DEFAULT_PORTS[scheme]:
        return name
    return f"{name}:{port}"

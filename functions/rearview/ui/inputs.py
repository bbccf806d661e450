"""Reading the browser's requests: form bodies, query fields, safe redirect targets, our own origin.

Everything here treats the request as hostile input: a form body is bounded (`MAX_FORM_BYTES`,
64 fields) and must be urlencoded; a `next` target must stay inside the UI (no open redirect);
the hosts we answer as come from the validated `Host`, the configured public URL and, only when
the deployment trusts them, forwarded headers (`rearview.api.origin`).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from starlette.exceptions import HTTPException
from starlette.requests import Request

from rearview.api.origin import request_origin, valid_host
from rearview.ui.session import UI_PATH
from rearview.ui.views import Params

MAX_FORM_BYTES = 64 * 1024
"""The largest form body accepted (content is at most 4,000 characters)."""
MAX_FORM_FIELDS = 64


async def read_form(request: Request) -> Params:
    """The urlencoded form body (413 past `MAX_FORM_BYTES`, 415 if of another type; empty: no fields)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, "form too large")
    if not body:
        return {}
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise HTTPException(415, "forms must be application/x-www-form-urlencoded")
    try:
        return parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(400, "malformed form") from None


def query_params(request: Request) -> Params:
    """The query string's fields, each with all its values."""
    return {k: request.query_params.getlist(k) for k in request.query_params}


def safe_next(target: str | None) -> str | None:
    """`target` if it is a path inside the UI (no scheme, host or `//`), else None: no open redirect."""
    if not target or "\\" in target or "//" in target or any(c < " " for c in target):
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not (parts.path == UI_PATH or parts.path.startswith(UI_PATH + "/")):
        return None
    return target


def served_hosts(request: Request, public_url: str | None, trust_forwarded: bool) -> list[str]:
    """The `host[:port]` values this server answers as: its `Host`, forwarded host, public URL."""
    hosts = [h for h in (valid_host(request.headers.get("host")),) if h]
    hosts.append(urlsplit(request_origin(request.scope, request.headers, trust_forwarded)).netloc)
    if public_url:
        hosts.append(urlsplit(public_url).netloc)
    return hosts


def is_https(request: Request, public_url: str | None, trust_forwarded: bool) -> bool:
    """Whether the browser reaches us over https (the session cookie is then `Secure`)."""
    origin = public_url or request_origin(request.scope, request.headers, trust_forwarded)
    return origin.startswith("https://")

"""A real `rearview` HTTP server on a loopback port, in a thread (same code path as `rearview serve`)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.api.fair_share import Fairness
from rearview.api.jwt_auth import JwtVerifier
from rearview.bootstrap import build_service
from rearview.config.settings import Settings

UNLIMITED = Fairness(requests_per_second=0)
"""The tiers drive one tenant far faster than an agent does: no request rate (tests/unit/test_tenant_rate.py
tests it)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(
    data_dir: Path,
    config_file: Path | None = None,
    authorization_server: str | None = None,
    **overrides: object,
) -> Iterator[str]:
    """Serve Rearview (SQLite store + index, hashing embedder unless `embedder=`) and yield its MCP URL.

    `authorization_server` turns on OAuth discovery (protected-resource metadata naming it). With
    `jwt_issuer=`, as in `rearview serve`, the issuer is advertised and its bearer JWTs are verified
    here (`rearview.api.jwt_auth`), beside any API keys.
    """
    overrides.setdefault("embedder", "hashing")
    settings = Settings.load(data_dir=data_dir, config_file=config_file, **overrides)
    keys = settings.api_keys()
    service = build_service(settings)
    verifier = JwtVerifier.from_settings(settings)
    resolver = ApiKeyResolver(keys, None if keys or verifier else settings.default_tenant)
    app = create_app(
        service,
        resolver,
        authorization_server=authorization_server or (settings.jwt_issuer if verifier else None),
        token_verifier=verifier,
        fairness=UNLIMITED,
    )
    with serving(app) as url:
        yield url


@contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    """Serve `app` with uvicorn on a free loopback port in a thread; yield its MCP URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)

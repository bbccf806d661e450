"""A real `rearview` server with the memory browser on, on a loopback port, in a thread.

The same app `rearview serve` builds (its defaults: the UI on), with the hashing embedder.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.bootstrap import build_service
from rearview.config.settings import Settings
from tests.e2e.server import free_port


@contextmanager
def running_ui_server(data_dir: Path, config_file: Path | None = None) -> Iterator[str]:
    """Serve Rearview with the UI and yield its base URL (`http://127.0.0.1:<port>`)."""
    settings = Settings.load(data_dir=data_dir, config_file=config_file, embedder="hashing")
    keys = settings.api_keys()
    service = build_service(settings)
    resolver = ApiKeyResolver(keys, None if keys else settings.default_tenant)
    app = create_app(service, resolver, ui=True, ui_secret="browser-tests-session-secret-0123456789")
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
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)

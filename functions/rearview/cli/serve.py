"""`rearview serve`: MCP over HTTP (and the memory browser), with the lifecycle jobs in the background.

It refuses to serve beyond loopback without credentials, and exits 130 after a clean shutdown on
Ctrl-C.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rearview.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from rearview.cli.console import plural
from rearview.config.settings import Settings
from rearview.errors import ConfigurationError
from rearview.shared.port_check import ensure_port_free

if TYPE_CHECKING:
    from rearview.service.lifecycle import LifecycleTimer
    from rearview.service.memory_service import MemoryService

MAX_PORT = 65535


def add_serve(cmd: argparse.ArgumentParser) -> None:
    """`serve`'s options: where to listen, and whether to serve the memory browser."""
    cmd.add_argument("--host", default=None, metavar="H", help="bind address (default 127.0.0.1)")
    cmd.add_argument("--port", type=_port, default=None, metavar="P", help="port 0-65535 (default 8080)")
    cmd.add_argument(
        "--no-ui", dest="ui", action="store_false", default=None,
        help="do not serve the memory browser at /ui (REARVIEW_UI=false does the same)",
    )  # fmt: skip
    cmd.set_defaults(func=_serve)


def _port(text: str) -> int:
    """`--port`: a TCP port, 0-65535 (0: any free one); argparse turns the error into exit 2."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be 0-{MAX_PORT}, got {port}")
    return port


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from rearview.api.access_log import install_console_handler
    from rearview.api.app import LOOPBACK, create_app
    from rearview.api.auth import ApiKeyResolver
    from rearview.api.courtesy import share_the_interpreter
    from rearview.api.fair_share import Fairness
    from rearview.api.http_limits import Limits, server_options
    from rearview.api.jwt_auth import JwtVerifier
    from rearview.bootstrap import build_checkpoints, build_service

    settings = settings.model_copy(
        update={
            k: v for k, v in {"host": args.host, "port": args.port, "ui": args.ui}.items() if v is not None
        }
    )
    keys = settings.api_keys()
    verifier = JwtVerifier.from_settings(settings)  # REARVIEW_JWT_ISSUER: OAuth on, tokens checked here
    if not keys and verifier is None and settings.host not in LOOPBACK:
        raise ConfigurationError(
            "--host",
            f"refusing to serve on {settings.host} without API keys: add [api_keys] to "
            f"{settings.config_file or settings.data_dir / 'config.toml'}, set REARVIEW_JWT_ISSUER "
            "or bind to 127.0.0.1",
        )
    port = ensure_port_free(settings.host, settings.port)  # before the banner, the store and the embedder
    settings = settings.model_copy(update={"port": port})  # --port 0: the banner shows the port it got
    open_tenant = settings.default_tenant if not keys and verifier is None else None
    if open_tenant is not None:
        settings = settings.for_one_tenant()  # nobody to share with: no rate, no ingest bound
    service = build_service(settings)
    resolver = ApiKeyResolver(keys, open_tenant)
    if settings.ui and verifier is not None and not keys:
        print("Memory browser off: it signs in with API keys, and [api_keys] has none", flush=True)
        settings = settings.model_copy(update={"ui": False})
    revocations = None
    if settings.ui and keys:  # signed-out UI sessions outlive a restart (the secret may too)
        revocations = build_checkpoints(settings)
        revocations.ensure_schema()
    app = create_app(
        service,
        resolver,
        host=settings.host,
        public_url=settings.public_url,
        authorization_server=settings.jwt_issuer if verifier else None,
        token_verifier=verifier,
        trust_forwarded_headers=settings.trust_forwarded_headers,
        forwarded_proxies=settings.forwarded_proxies,
        refusals_per_minute=settings.auth_refusals_per_minute,
        search_concurrency=settings.search_concurrency,
        fairness=Fairness.from_settings(settings),  # each tenant's rate and share (`api/fair_share.py`)
        ui=settings.ui,
        ui_secret=settings.ui_secret.get_secret_value() if settings.ui_secret else None,
        ui_revocations=revocations,
    )
    mode = describe_auth(settings, len(keys))
    # flushed: into a pipe or a log file (pipx runs `python -E`, which ignores PYTHONUNBUFFERED) a
    # buffered banner waits for the server to stop
    print(
        f"Rearview MCP at http://{settings.host}:{settings.port}/mcp ({mode}; {describe_data(settings)})",
        flush=True,
    )
    if settings.ui:
        print(f"Memory browser at http://{settings.host}:{settings.port}/ui", flush=True)
    timer = _lifecycle_timer(settings, service)
    share_the_interpreter(settings.gil_switch_interval_ms)  # threads and the event loop take turns often
    try:
        # uvicorn rewrites the scheme and client from X-Forwarded-* by default; only behind a proxy
        proxied = settings.trust_forwarded_headers
        install_console_handler()  # our key=value access line replaces uvicorn's access log
        with _interrupts() as interrupted:
            uvicorn.run(
                app,
                host=settings.host,
                port=settings.port,
                log_level="warning",
                proxy_headers=proxied,
                access_log=False,
                **server_options(Limits.from_settings(settings)),  # idle, slow-head, size, per-address limits
            )
        if interrupted:  # Ctrl-C: shut down cleanly, then the status a shell expects of an interrupt
            return EXIT_INTERRUPTED
    except SystemExit as exc:
        # uvicorn exits 3 when it cannot start (its bind error is already on stderr): that is a
        # runtime failure here, and 3 means a lifecycle job stopped at its budget.
        if exc.code in (0, None):
            return EXIT_OK
        print(f"rearview: error: the server did not start (uvicorn exit {exc.code})", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if timer is not None:
            timer.stop()
    return EXIT_OK


@contextmanager
def _interrupts() -> Iterator[list[int]]:
    """The SIGINTs received in the block, recorded instead of raised (main thread only; else none).

    uvicorn handles Ctrl-C itself, shuts down gracefully and then re-raises the signal to the handler
    it found: this one, which records it, so `serve` can exit 130 after a clean shutdown (uvicorn's
    return alone looked like success: exit 0).
    """
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: seen.append(signum))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def describe_auth(settings: Settings, keys: int) -> str:
    """Who may call: the API keys, the OAuth issuer whose tokens are accepted, or the one open tenant."""
    parts = [plural(keys, "API key")] if keys else []
    if settings.jwt_issuer:
        audience = settings.jwt_audience or "any (set REARVIEW_JWT_AUDIENCE)"
        parts.append(f"OAuth on: tokens of {settings.jwt_issuer}, audience {audience}")
    return "; ".join(parts) or f"no API keys: single tenant '{settings.default_tenant}'"


def describe_data(settings: Settings) -> str:
    """Where the memories, the index and the archive are: the data directory only if one of them uses it."""
    places = []
    if settings.store == "dynamodb":
        places.append(f"DynamoDB table {settings.table_name}")
    if settings.index == "opensearch":
        places.append(f"OpenSearch at {settings.opensearch_endpoint}")
    if settings.archive == "s3":
        places.append(f"archive in s3://{settings.archive_bucket}/{settings.archive_prefix}")
    if "sqlite" in (settings.store, settings.index) or settings.archive == "local":
        places.append(str(settings.data_dir))
    if "memory" in (settings.store, settings.index):
        places.append("in-memory backends: gone on exit")
    return "data in " + ", ".join(places)


def _lifecycle_timer(settings: Settings, service: MemoryService) -> LifecycleTimer | None:
    """The background decay + archive (+ cues, with a model) rounds of `rearview serve` (None: interval 0)."""
    if settings.lifecycle_interval_s <= 0:
        return None
    from rearview.bootstrap import build_lifecycle
    from rearview.service.lifecycle import LifecycleTimer

    timer = LifecycleTimer(
        build_lifecycle(settings, service), settings.lifecycle_interval_s, settings.lifecycle_budget_s
    )
    timer.start()
    print(
        f"lifecycle jobs every {settings.lifecycle_interval_s:g} s (REARVIEW_LIFECYCLE_INTERVAL_S=0 disables)"
    )
    return timer

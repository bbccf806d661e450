"""The MCP Lambda handler: API Gateway HTTP API (payload 2.0) and Function URL events -> the MCP app.

It serves the very ASGI app `rearview serve` runs (`rearview.api.app.create_app`): stateless,
JSON responses, both protocol eras (2025 initialize handshake and 2026-07-28 per request).

Lifecycle (one `McpRuntime` per process):
- init: settings, the key map (apikey mode), the service, the app, and an `AsgiBridge` that
  enters the app's lifespan once on its own event loop. In Lambda this happens during the init
  phase (so SnapStart snapshots it and provisioned concurrency pre-pays it); elsewhere (tests,
  benchmarks) on the first invoke.
- invoke: parse the event, set the gateway-authenticated tenant (jwt mode), run the request on
  the persistent loop (bounded by the invocation's remaining time), emit tool metrics, render.
  GET/DELETE on /mcp are answered 405 by the app at once.

The memory browser (`/ui`, `rearview.ui`) is served too when `REARVIEW_UI=true` (template
parameter MemoryBrowser=Enabled) and the auth mode is `apikey`; `REARVIEW_UI_SECRET` signs its
session cookies alike on every instance.

Observability: Powertools Logger (JSON; correlation id = the API Gateway / Function URL request
id; keys `mcp_method`, `mcp_tool`; one `request` line per request from `rearview.api.access_log`),
Powertools Metrics (EMF, namespace `POWERTOOLS_METRICS_NAMESPACE`, default `Rearview`; see
`handlers._telemetry` for the metrics).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from handlers._asgi import AsgiBridge, HttpRequest, HttpResponse, UnsupportedEventError
from handlers._telemetry import RpcCall, record_tool_metrics, rpc_call

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from rearview.api.auth import ApiKeyResolver
    from rearview.api.lambda_auth import LambdaAuthSettings
    from rearview.service.memory_service import MemoryService

__all__ = ["McpHandlerSettings", "McpRuntime", "handler", "runtime"]

logger = Logger()  # service name: POWERTOOLS_SERVICE_NAME (template.yaml sets it)
# The app's access line (`rearview.access`, one per request) and the package's other loggers
# write through this logger's JSON formatter, so they carry the correlation id.
copy_config_to_registered_loggers(source_logger=logger, include={"rearview"})
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "Rearview")

SERVED_HOST = "0.0.0.0"  # noqa: S104 - never loopback in Lambda: auth, not DNS-rebinding checks, guards it
DEFAULT_TIMEOUT_S = 30.0


class McpHandlerSettings(BaseSettings):
    """Knobs of the Lambda adapter itself (environment variables `REARVIEW_*`)."""

    model_config = SettingsConfigDict(env_prefix="REARVIEW_", extra="ignore")

    ensure_index: bool = True
    """Create the search index at init if it is missing (idempotent; one round trip per cold start)."""
    deadline_margin_ms: int = Field(default=1000, ge=0)
    """Answer 504 this long before the invocation's deadline rather than being killed mid-request."""
    ui: bool = False
    """Serve the memory browser at `/ui` (template parameter MemoryBrowser=Enabled); off by default here."""
    ui_secret: SecretStr | None = None
    """Signs the memory browser's session cookies (else the secret named by `REARVIEW_UI_SECRET_ARN`)."""

    def ui_enabled(self, auth_mode: str) -> bool:
        """Whether to serve the browser: asked for, and API-key auth (a browser cannot send the JWT)."""
        if not self.ui:
            return False
        if auth_mode != "apikey":
            logger.warning(
                "REARVIEW_UI ignored: the memory browser signs in with API keys (auth mode apikey)"
            )
            return False
        return True  # the session secret: `handlers._ui_secret.session_secret` (required)


@dataclass(slots=True)
class McpRuntime:
    """Everything built once per process. `close()` ends the lifespan (tests; Lambda never does)."""

    bridge: AsgiBridge
    service: MemoryService
    auth: LambdaAuthSettings
    settings: McpHandlerSettings
    resolver: ApiKeyResolver

    @classmethod
    def from_environment(cls) -> McpRuntime:
        """Build from `REARVIEW_*`; fetches the API key map (apikey mode) and may create the index."""
        from handlers._service import build_lambda_service
        from handlers._ui_secret import session_secret
        from rearview.api.app import create_app
        from rearview.api.lambda_auth import LambdaAuthSettings, build_resolver
        from rearview.bootstrap import build_checkpoints
        from rearview.config.settings import Settings

        settings = Settings.load()
        handler_settings = McpHandlerSettings()
        auth = LambdaAuthSettings()
        service = build_lambda_service(settings)
        if handler_settings.ensure_index:
            service.index.ensure_schema()
        resolver = build_resolver(auth, settings.region)
        ui = handler_settings.ui_enabled(auth.auth_mode)
        app = create_app(
            service,
            resolver,
            host=SERVED_HOST,
            public_url=settings.public_url,
            authorization_server=(settings.jwt_issuer or None) if auth.auth_mode == "jwt" else None,
            trust_forwarded_headers=settings.trust_forwarded_headers,
            forwarded_proxies=settings.forwarded_proxies,
            refusals_per_minute=settings.auth_refusals_per_minute,
            search_concurrency=settings.search_concurrency,
            ui=ui,
            ui_secret=session_secret(ui, handler_settings.ui_secret, settings.region),
            ui_revocations=build_checkpoints(settings) if ui else None,  # shared by every instance
        )
        return cls(AsgiBridge(app), service, auth, handler_settings, resolver)

    def handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        """Serve one HTTP event; always returns a proxy result (400 for a non-HTTP event)."""
        from rearview.api.lambda_auth import authenticated_principal, principal_from_claims

        try:
            request = HttpRequest.from_event(event)
        except UnsupportedEventError as exc:
            logger.warning("unsupported event", extra={"reason": str(exc)})
            return HttpResponse.error(400, "unsupported_event", str(exc)).to_proxy_result()
        call = rpc_call(request.body) if request.method == "POST" else RpcCall()
        if call.method:
            logger.append_keys(mcp_method=call.method, mcp_tool=call.tool)
        principal = (
            principal_from_claims(event, self.auth.tenant_claim, self.auth.agent_claim)
            if self.auth.auth_mode == "jwt"
            else None
        )
        started = time.perf_counter()
        with authenticated_principal(principal):
            response = self.bridge.invoke(request, event, context, self._timeout_s(context))
        elapsed_ms = (time.perf_counter() - started) * 1000
        record_tool_metrics(metrics, call, response.status, bytes(response.body), elapsed_ms)
        return response.to_proxy_result()

    def after_restore(self) -> None:
        """SnapStart restored this runtime from a snapshot: re-fetch the API keys on the next request."""
        from rearview.api.lambda_auth import RefreshingKeyResolver

        if isinstance(self.resolver, RefreshingKeyResolver):
            self.resolver.expire()

    def preload(self) -> None:
        """Load now what the first tool calls would load: every capability, numpy, each tool's model."""
        import numpy  # noqa: F401 - the first vector's import, paid here

        from rearview.api.tools.schemas import build_published

        self.service.load_capabilities()
        build_published()  # each tool's argument model (`rearview.api.tools.schemas`)

    def close(self) -> None:
        self.bridge.close()

    def _timeout_s(self, context: Any) -> float:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if not callable(remaining):
            return DEFAULT_TIMEOUT_S
        margin = self.settings.deadline_margin_ms
        return max(0.1, (int(remaining()) - margin) / 1000)


@cache
def runtime() -> McpRuntime:
    """The process's runtime, built on first use (at import in a Lambda init phase)."""
    return McpRuntime.from_environment()


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (`handlers.mcp.handler`)."""
    return runtime().handle(event, context)


def _init_in_lambda() -> None:
    """Build the runtime in Lambda's init phase: SnapStart snapshots it, provisioned concurrency pre-pays it.

    `AWS_LAMBDA_INITIALIZATION_TYPE` is set by Lambda only (on-demand, provisioned-concurrency,
    snap-start); tests and benchmarks import this module without it and build lazily. An on-demand
    init loads what `initialize` and `tools/list` need (the tools' schemas are shipped text,
    `rearview.api.tools.schemas`), and each capability (and numpy) loads, each tool's argument model
    is built, on its first call; where init is pre-paid, everything loads here (`McpRuntime.preload`). Under
    SnapStart, the runtime's `snapshot_restore_py` hook makes a restored instance re-fetch the keys.
    """
    kind = os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE")
    if not kind:
        return
    runtime()
    if kind in ("snap-start", "provisioned-concurrency"):
        runtime().preload()
    if kind == "snap-start":
        from snapshot_restore_py import register_after_restore  # type: ignore[import-not-found]

        register_after_restore(lambda: runtime().after_restore())


_init_in_lambda()

"""Protocol errors to the letter: what the SDK answers loosely is refused with the spec's code.

`ProtocolChecks` runs in the SDK's middleware chain, so both eras (the 2025 handshake and the
2026-07-28 per-request envelope) get the same answers, over `rearview serve` and Lambda alike:

- `tools/call` naming no served tool: JSON-RPC -32602 (Invalid params), not an `isError`
  tool result (the spec lists unknown tools among the protocol errors).
- `prompts/get` naming no served prompt: -32602, not the SDK's code 0 (2025 era) or -32603
  with a logged traceback (2026-07-28).
- a `cursor` on `tools/list`, `prompts/list`, `resources/list` or `resources/templates/list`:
  -32602. Every list fits one page, so the server never issues a cursor and none is valid.
- `initialize` asking for 2025-03-26 is answered with the newest handshake version instead
  (the spec's counter-offer), because that revision requires receiving JSON-RPC batches. The
  choice: stop negotiating it rather than accept batches, since the SDK parses no batch on either
  path and splitting one outside it would make Rearview a second JSON-RPC dispatcher. A request
  carrying `MCP-Protocol-Version: 2025-03-26` is refused 400 at the HTTP layer
  (`rearview.api.request_ids`); one carrying no header is served as the spec says (assumed
  2025-03-26), and a batch it sends gets a one-line -32600 there too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

UNSERVED_VERSIONS = frozenset({"2025-03-26"})
"""Revisions the SDK would negotiate but Rearview does not serve fully (2025-03-26: batches)."""
SERVED_VERSIONS = tuple(
    v for v in (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS) if v not in UNSERVED_VERSIONS
)
"""Every revision a client may negotiate here, oldest first."""
PAGINATED_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
MAX_ECHOED_NAME_CHARS = 64
"""An unknown name is quoted back at most this long."""
INVALID_CURSOR = "Invalid cursor: this server never issues one (every list fits one page)"


def shown(name: str) -> str:
    """`name` as an error message quotes it: cut to `MAX_ECHOED_NAME_CHARS`."""
    return name if len(name) <= MAX_ECHOED_NAME_CHARS else name[:MAX_ECHOED_NAME_CHARS] + "..."


class ProtocolChecks:
    """SDK middleware (`MCPServer.middleware`): refuse unknown names and cursors with -32602.

    It runs before the SDK validates params, so it only reads what is there: a missing or
    non-string `name` or a malformed `cursor` is left to the SDK's own validation (-32602 too).
    Names are looked up on `mcp` at call time, so a tool or prompt added later is known.
    """

    def __init__(self, mcp: MCPServer[Any]) -> None:
        self.mcp = mcp

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params: Mapping[str, Any] = ctx.params if isinstance(ctx.params, Mapping) else {}
        name = params.get("name")
        if ctx.method == "initialize" and params.get("protocolVersion") in UNSERVED_VERSIONS:
            # Stateless: the connection the SDK commits the wire version to ends with this request.
            return await call_next(
                replace(ctx, params={**params, "protocolVersion": LATEST_HANDSHAKE_VERSION})
            )
        if ctx.method == "tools/call" and isinstance(name, str):
            if name not in {tool.name for tool in await self.mcp.list_tools()}:
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {shown(name)}")
        elif ctx.method == "prompts/get" and isinstance(name, str):
            if name not in {prompt.name for prompt in await self.mcp.list_prompts()}:
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {shown(name)}")
        elif ctx.method in PAGINATED_METHODS and params.get("cursor") is not None:
            raise MCPError(code=INVALID_PARAMS, message=INVALID_CURSOR)
        return await call_next(ctx)

"""Tool-call metrics read off the JSON-RPC exchange, so the domain code needs no metrics hook.

The handler sees the request body (which method, which tool) and the JSON response (the tool's
`structuredContent` and `isError`). From those it emits, per call:

| metric | unit | when |
|---|---|---|
| `AuthFailures` | Count | any request answered 401 (missing or unknown credentials) |
| `ToolCalls` | Count | every `tools/call` |
| `ToolErrors` | Count | the tool answered `isError: true`, a JSON-RPC error, or HTTP >= 500 |
| `MemoryWrites` | Count | `memory_write` succeeded (any action) |
| `MemoryMerges` | Count | `memory_write` merged into an existing memory |
| `MemorySupersedes` | Count | `memory_write` superseded older memories |
| `MemorySearches` | Count | `memory_search` succeeded |
| `SearchLatency` | Milliseconds | `memory_search`: the whole request as the handler saw it |
| `DegradedSearches` | Count | `memory_search` answered `degraded: true` |

Nothing here raises: a body that is not the expected JSON yields no metric.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from rearview.api.access_log import RpcCall, rpc_call

__all__ = ["MetricsSink", "RpcCall", "record_tool_metrics", "rpc_call"]

COUNT = "Count"
MILLISECONDS = "Milliseconds"


class MetricsSink(Protocol):
    """Where metrics go (Powertools `Metrics` in Lambda; a list-backed fake in tests)."""

    def add_metric(self, name: str, unit: Any, value: float) -> None: ...


def record_tool_metrics(
    sink: MetricsSink, call: RpcCall, status: int, response_body: bytes, elapsed_ms: float
) -> None:
    """Emit the metrics of one exchange (see the module table): auth failures, then tool calls only."""
    if status == 401:
        sink.add_metric("AuthFailures", COUNT, 1)
        return
    if call.method != "tools/call" or call.tool is None:
        return
    sink.add_metric("ToolCalls", COUNT, 1)
    reply = _json(response_body) if status < 500 else None
    result = reply.get("result") if isinstance(reply, Mapping) else None
    if not isinstance(result, Mapping) or result.get("isError"):
        sink.add_metric("ToolErrors", COUNT, 1)
        return
    structured = result.get("structuredContent")
    content: Mapping[str, Any] = structured if isinstance(structured, Mapping) else {}
    if call.tool == "memory_write":
        sink.add_metric("MemoryWrites", COUNT, 1)
        action = content.get("action")
        if action == "merged":
            sink.add_metric("MemoryMerges", COUNT, 1)
        elif action == "superseded" or content.get("superseded_ids"):
            sink.add_metric("MemorySupersedes", COUNT, 1)
    elif call.tool == "memory_search":
        sink.add_metric("MemorySearches", COUNT, 1)
        sink.add_metric("SearchLatency", MILLISECONDS, elapsed_ms)
        if content.get("degraded"):
            sink.add_metric("DegradedSearches", COUNT, 1)


def _json(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None

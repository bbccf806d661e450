"""What the Python API returns beyond `models.py`: the tools' own output models, read back.

Both transports answer with the same models, parsed from the same tool output (`api/outputs.py`),
so code written against the embedded store runs unchanged against a server. This module imports
the API's output models: the facade (`client.memory`) loads it on first use, not at import.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent

from rearview.api.outputs import HitOutput, SearchOutput, SummaryReceipt, WriteReceipt
from rearview.errors import BackendError

__all__ = ["HitOutput", "Recall", "SummaryReceipt", "WriteReceipt", "recall_of", "structured_of"]


class Recall(SearchOutput):
    """What `Memory.search` found: hits best first, the context block to put in a prompt, its cost.

    `results` are the `memory_search` tool's hits (`why` only with `explain=True`); `context` is the
    exact text the tool returns (one escaped, attributed record per memory); `token_estimate` is what
    the larger of the two renderings costs a model.
    """

    context: str


def structured_of(result: CallToolResult, tool: str) -> dict[str, Any]:
    """A successful tool result's `structuredContent` (a tool of this server always has one)."""
    data = result.structured_content
    if not isinstance(data, dict):
        raise BackendError(f"`{tool}` answered without structured content: is this a Rearview server?")
    return data


def recall_of(result: CallToolResult) -> Recall:
    """A `memory_search` tool result as a `Recall`: its structured hits and its text context block."""
    text = next((c.text for c in result.content if isinstance(c, TextContent)), "")
    return Recall.model_validate({**structured_of(result, "memory_search"), "context": text})

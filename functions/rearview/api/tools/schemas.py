"""The tools' published schemas, generated once and shipped: a cold start builds no argument model.

Building a tool the SDK's way (`Tool.from_function`, then `StrictTool.strict`) creates a pydantic
model of its arguments and writes the JSON schemas of its input and output: for the ten tools about
40 ms of CPU, 5 % of a Lambda cold start's import floor (`benchmarks/speed/cold_start.py`), paid at
every init although `initialize` and `tools/list` need only the schemas' text. `schemas.json`
(beside this module) holds that text for each tool, as the tools generate it; `LazyTool` publishes
it and builds the real `StrictTool` on the tool's first call (that tool's only: a few ms).

`schemas.json` is generated, never edited: `make tool-schemas` (`python -m rearview.api.tools`)
rewrites it, and `tests/unit/test_tool_schemas.py` fails while it differs from what the tools
generate now. It records the pydantic and mcp minor versions that wrote it (they decide the
schemas' text); with others installed, or a tool missing from it, `lazy_tools` builds every tool at
once, as before. A tool whose real schemas differ from the shipped ones on its first call (an edit without
regenerating) is logged as an error.

Why a `Tool` subclass handed to the `MCPServer` constructor (`tools=`): the server reads a tool's
`name`, `description`, `parameters`, `output_schema` and `annotations` (tools/list) and calls its
`run` (tools/call), the surface `StrictTool` already builds on, and `FuncMetadata`'s fields are
documented as read live; nothing private of the SDK is touched. Registering through
`MCPServer.add_tool` cannot skip building the model, and a low-level `Server` with its own list and
call handlers would re-implement what the SDK does around a call (the context, structured output,
the errors of both protocol eras, the middleware `rearview.api.protocol` adds).
"""

from __future__ import annotations

import inspect
import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pydantic
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import ToolAnnotations
from pydantic import PrivateAttr

from rearview.api.arguments import StrictTool

__all__ = [
    "SCHEMAS_PATH",
    "LazyTool",
    "build_published",
    "generated_schemas",
    "lazy_tools",
    "shipped_schemas",
]

SCHEMAS_PATH = Path(__file__).with_name("schemas.json")
REGENERATE = "make tool-schemas"
logger = logging.getLogger(__name__)
_published: list[weakref.ref[LazyTool]] = []
"""Every `LazyTool` made (weakly): what `build_published` builds where init is pre-paid."""

ToolSpec = tuple[Callable[..., Awaitable[Any]], ToolAnnotations]
"""A tool's function (its name and docstring are the tool's) and its annotations."""


def _versions() -> dict[str, str]:
    """The minor versions of what writes the schemas' text.

    Not the exact versions: the Lambda layer resolves `requirements.txt` when it is built, so its
    patch releases may be newer than the ones `schemas.json` was generated with. A patch release
    that changed the text would be logged on each tool's first call (`LazyTool.tool`).
    """
    return {
        name: ".".join(v.split(".")[:2])
        for name, v in (("pydantic", pydantic.VERSION), ("mcp", version("mcp")))
    }


def generated_schemas(tools: Sequence[Tool]) -> dict[str, Any]:
    """What `schemas.json` holds for `tools` (built the SDK's way): each one's input and output schema."""
    return {
        **_versions(),
        "tools": {tool.name: {"input": tool.parameters, "output": tool.output_schema} for tool in tools},
    }


@cache
def shipped_schemas() -> dict[str, Any] | None:
    """`schemas.json`'s tools, when the installed pydantic and mcp are the ones that wrote it; else None."""
    try:
        shipped = json.loads(SCHEMAS_PATH.read_text(encoding="utf-8"))
        written = {key: shipped[key] for key in ("pydantic", "mcp")}
        tools: dict[str, Any] = shipped["tools"]
    except (OSError, ValueError, LookupError, TypeError):
        logger.warning("%s unreadable: the tools are built at registration", SCHEMAS_PATH.name)
        return None
    if written != _versions():
        logger.info("%s written by %s: the tools are built at registration", SCHEMAS_PATH.name, written)
        return None
    return tools


class LazyTool(Tool):
    """A strict tool published from its shipped schemas, built (`StrictTool.strict`) on its first call.

    Until then its `fn_metadata` holds only the output schema (the argument model is the SDK's empty
    base): the server reads nothing else of it before `run`, which is the built tool's.
    """

    _built: StrictTool | None = PrivateAttr(default=None)

    @classmethod
    def published(
        cls, fn: Callable[..., Awaitable[Any]], annotations: ToolAnnotations, schemas: Any
    ) -> LazyTool:
        """The tool for `fn` as `StrictTool.strict` would list it, from its shipped `schemas`."""
        tool = cls(
            fn=fn,
            name=fn.__name__,
            description=" ".join((fn.__doc__ or "").split()),
            parameters=schemas["input"],
            fn_metadata=FuncMetadata(arg_model=ArgModelBase, output_schema=schemas["output"]),
            is_async=inspect.iscoroutinefunction(fn),
            annotations=annotations,
        )
        _published[:] = [ref for ref in _published if ref() is not None] + [weakref.ref(tool)]
        return tool

    @property
    def built(self) -> bool:
        """Whether the first call has built the tool (its argument model and schemas)."""
        return self._built is not None

    def tool(self) -> StrictTool:
        """The real tool, built on first use; an error is logged if its schemas are not the shipped ones."""
        if self._built is None:
            built = StrictTool.strict(self.fn, self.annotations or ToolAnnotations())
            if _text(built) != _text(self):  # the order of keys too: tools/list is compared byte for byte
                logger.error(
                    "tool %s: its schemas differ from %s (published by tools/list); run `%s`",
                    self.name, SCHEMAS_PATH.name, REGENERATE,
                )  # fmt: skip
            self._built = built
        return self._built

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        """The built tool's `run` (`StrictTool.run`)."""
        return await self.tool().run(arguments, context, convert_result=convert_result)


def build_published() -> int:
    """Build each `LazyTool` not built yet (SnapStart, provisioned concurrency pre-pay init); how many."""
    pending = [tool for ref in _published if (tool := ref()) is not None and not tool.built]
    for tool in pending:
        tool.tool()
    return len(pending)


def _text(tool: Tool) -> str:
    return json.dumps([tool.parameters, tool.output_schema])


def lazy_tools(table: Sequence[ToolSpec]) -> list[Tool]:
    """The tools of `table`, in its order: `LazyTool`s from `schemas.json`, else built now (`StrictTool`)."""
    shipped = shipped_schemas()
    if shipped is None or any(fn.__name__ not in shipped for fn, _ in table):
        if shipped is not None:
            logger.warning(
                "%s lacks a tool: the tools are built at registration; run `%s`",
                SCHEMAS_PATH.name,
                REGENERATE,
            )
        return [StrictTool.strict(fn, annotations) for fn, annotations in table]
    return [LazyTool.published(fn, annotations, shipped[fn.__name__]) for fn, annotations in table]

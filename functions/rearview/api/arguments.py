"""Strict tool and prompt arguments: an unknown or out-of-limits argument is refused, never dropped.

The SDK builds each tool's argument model from its signature and ignores keys it does not know,
so a typo (`type` for `types`, `visiblity`) used to be silently dropped and the call ran with the
default. `StrictTool` forbids extra keys in that model, so the published input schema says
`additionalProperties: false` and carries every limit of `models.py`, and it turns the SDK's
argument validation failure into `invalid_input` naming each field, its limit, and for an unknown
key the closest valid name. `StrictPrompt` does the same for a prompt's arguments.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from rearview.errors import InvalidInputError
from rearview.limits import MAX_REPORTED_PROBLEMS, one_error, problem_of

MAX_ECHOED_KEY_CHARS = 40
"""An unknown key is quoted back at most this long: the caller's text is not echoed in full."""
SYNONYMS: dict[str, tuple[str, ...]] = {
    "limit": ("top_k",), "k": ("top_k",), "n": ("top_k",), "max_results": ("top_k",),
    "num_results": ("top_k",), "count": ("top_k",), "size": ("top_k",),
    "q": ("query",), "search": ("query",), "text": ("content", "query"), "memory": ("content",),
    "id": ("memory_id", "ids"), "memory_ids": ("ids",), "tag": ("tags",), "entity": ("entities",),
    "since": ("time_from",), "after": ("time_from",), "start": ("time_from",), "from": ("time_from",),
    "until": ("time_to",), "before": ("time_to",), "end": ("time_to",), "to": ("time_to",),
    "ttl": ("ttl_days",), "expires_in_days": ("ttl_days",), "agent": ("agent_id",),
    "session": ("session_id",), "memory_type": ("type", "types"), "priority": ("importance",),
}  # fmt: skip
"""Names other memory APIs use for an argument, by the ones ours use: what spelling distance misses."""


def unknown_argument(key: str, valid: Iterable[str]) -> InvalidInputError:
    """The error for an argument nobody declared: its name, and the closest valid one (difflib)."""
    names = sorted(valid)
    shown = key if len(key) <= MAX_ECHOED_KEY_CHARS else key[:MAX_ECHOED_KEY_CHARS] + "..."
    close = [n for n in SYNONYMS.get(key.casefold(), ()) if n in names][:1]
    close = close or difflib.get_close_matches(key, names, n=1)
    if close:
        return InvalidInputError(shown, f"unknown argument; did you mean `{close[0]}`?")
    return InvalidInputError(shown, "unknown argument", allowed=names or ["(none)"])


def invalid_arguments(exc: ValidationError, valid: Iterable[str]) -> InvalidInputError:
    """One `InvalidInputError` for every problem pydantic found in a call's arguments.

    The field is the argument (with the item's position or key inside it); the problem is
    pydantic's own message, which states the limit ("at most 100 characters") and never the value.
    """
    names = list(valid)
    details = exc.errors(include_url=False, include_input=False)
    return one_error([_one_error(detail, names) for detail in details[:MAX_REPORTED_PROBLEMS]], len(details))


def _one_error(detail: ErrorDetails, valid: Sequence[str]) -> InvalidInputError:
    loc = [str(part) for part in detail["loc"]]
    if detail["type"] == "extra_forbidden" and len(loc) == 1:
        return unknown_argument(loc[0], valid)
    if detail["type"] == "extra_forbidden" and loc:  # inside an argument (a `memory_ingest` message)
        key = loc[-1] if len(loc[-1]) <= MAX_ECHOED_KEY_CHARS else loc[-1][:MAX_ECHOED_KEY_CHARS] + "..."
        return InvalidInputError(".".join([*loc[:-1], key]), "unknown key")
    if detail["type"] in ("model_type", "model_attributes_type", "dict_type"):
        # pydantic's message names our class ("... instance of MessageArg"): an implementation detail
        return InvalidInputError(".".join(loc) or "arguments", "must be a JSON object")
    return InvalidInputError(".".join(loc) or "arguments", problem_of(detail))


def forbid_extra(model: type[ArgModelBase]) -> type[ArgModelBase]:
    """`model` with unknown keys refused (`additionalProperties: false` in its JSON schema).

    Its validator is built on its first use (`defer_build`): the tool's first call, not every cold start.
    """
    config = ConfigDict(extra="forbid", defer_build=True)
    attrs = {"model_config": config, "__module__": model.__module__}
    return cast(type[ArgModelBase], type(model.__name__, (model,), attrs))


def forbidding_extra(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (a model's, as pydantic writes it) as `forbid_extra(model)`'s: the same JSON text.

    What pydantic adds for `extra="forbid"`, in its (sorted) key order, so that the SDK's schema of a
    tool's lenient model is not generated twice; `tests/unit/test_tool_arguments.py` checks every
    tool's against pydantic's own.
    """
    return dict(sorted({**schema, "additionalProperties": False}.items()))


def compact_schema(schema: Any, keep_descriptions: bool) -> Any:
    """`schema` without what no client or model reads twice: titles, nullable unions, output prose.

    Every agent pays for `tools/list` on every session. Measured (2026-12, the clients' issue
    trackers: anthropics/claude-code#54197, #79944, microsoft/vscode#290063): Claude Code shows the
    model each tool's name, description and input schema only, and hands it `structuredContent` as
    JSON whether or not an output schema is declared (which it uses to validate the result); VS
    Code does the same. So an input keeps its parameter descriptions (the model chooses arguments
    by them) and loses the titles pydantic derives from names; an output schema keeps its shape
    (clients validate and type with it) and loses its prose and defaults (every result carries each
    field it has; validation ignores a default). `anyOf [T, null]` becomes `T`: an
    optional field is one that may be left out (the server still accepts an explicit null).
    """
    if isinstance(schema, list):
        return [compact_schema(v, keep_descriptions) for v in schema]
    if not isinstance(schema, dict):
        return schema
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        (kept,) = (o for o in options if o != {"type": "null"})
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        if rest.get("default", 0) is None:
            del rest["default"]
        return compact_schema({**kept, **rest}, keep_descriptions)
    dropped = {"title"} if keep_descriptions else {"title", "description", "default"}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in dropped:
            continue
        if key == "properties" and isinstance(value, dict):  # its keys are names (one may be `title`)
            out[key] = {name: compact_schema(v, keep_descriptions) for name, v in value.items()}
        elif key == "$defs" and isinstance(value, dict):  # a type's docstring: the field using it says more
            out[key] = {
                name: _without_description(compact_schema(v, keep_descriptions)) for name, v in value.items()
            }
        else:
            out[key] = compact_schema(value, keep_descriptions)
    nullable = {name for name, v in dict(schema.get("properties") or {}).items() if _nullable(v)}
    if nullable and isinstance(out.get("required"), list):  # a null is left out (`dump_output`)
        out["required"] = [name for name in out["required"] if name not in nullable]
    return out


def _without_description(schema: Any) -> Any:
    """`schema` without its own description (its properties keep theirs: the model fills them in)."""
    return {k: v for k, v in schema.items() if k != "description"} if isinstance(schema, dict) else schema


def _nullable(schema: Any) -> bool:
    options = schema.get("anyOf") if isinstance(schema, dict) else None
    return isinstance(options, list) and {"type": "null"} in options


def dump_output(result: BaseModel) -> dict[str, Any]:
    """A tool's result as its `structuredContent`: JSON, aliases, nulls left out (`compact_schema`)."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


class StrictTool(Tool):
    """A tool whose arguments must all be declared and within limits; any other call is `invalid_input`."""

    @classmethod
    def strict(cls, fn: Callable[..., Any], annotations: ToolAnnotations) -> StrictTool:
        """The tool for `fn` (structured output), with its argument model and input schema made strict."""
        tool = cls.from_function(fn, annotations=annotations, structured_output=True)
        model = forbid_extra(tool.fn_metadata.arg_model)
        tool.fn_metadata.arg_model = model  # read live by the SDK on every call
        tool.parameters = compact_schema(forbidding_extra(tool.parameters), keep_descriptions=True)
        output = tool.fn_metadata.output_schema  # not `tool.output_schema`: a cached property
        if output is not None:
            tool.fn_metadata.output_schema = compact_schema(output, keep_descriptions=False)
        tool.description = " ".join((tool.description or "").split())
        return cast(StrictTool, tool)

    @property
    def argument_names(self) -> list[str]:
        """The declared argument names, as callers spell them."""
        return [f.alias or name for name, f in self.fn_metadata.arg_model.model_fields.items()]

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        """`Tool.run`, with an argument validation failure reported as `invalid_input`.

        Worded like every other error of a tool (the SDK's prefix, then the error kind that
        `api/errors` gives an `InvalidInputError`), so a model reads one format.
        """
        try:
            return await super().run(arguments, context, convert_result=convert_result)
        except ToolError as exc:
            # Only the SDK's argument check: an output failing its schema is a server bug.
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            refused = invalid_arguments(exc.__cause__, self.argument_names)
            raise ToolError(f"Error executing tool {self.name}: invalid_input: {refused}") from exc.__cause__


class StrictPrompt(Prompt):
    """A prompt that refuses arguments it does not declare (the SDK would fail with an opaque error)."""

    async def render(self, arguments: dict[str, Any] | None, context: Any) -> Any:
        """`Prompt.render`, after refusing unknown arguments with an `invalid_input` message.

        A JSON-RPC "invalid params" error: the one a prompt's caller gets in both protocol eras
        (anything else is an opaque internal error in the 2026-07-28 one).
        """
        declared = [a.name for a in self.arguments or []]
        unknown = [key for key in arguments or {} if key not in declared]
        if unknown:
            refused = unknown_argument(unknown[0], declared)
            raise MCPError(code=INVALID_PARAMS, message=f"invalid_input: {refused}")
        return await super().render(arguments, context)

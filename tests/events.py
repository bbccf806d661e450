"""The sample Lambda events in `events/` (the same files `sam local invoke -e` uses).

`load_event("mcp-2026-07-28/tools-call-memory_search")` returns a fresh copy of
`events/mcp-2026-07-28/tools-call-memory_search.json`. The helpers below derive variants of a
real event (other credentials, other tool arguments) without hand-writing payloads.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "EVENTS_DIR",
    "TENANT_A_KEY",
    "TENANT_B_KEY",
    "event_names",
    "load_event",
    "rpc_body",
    "with_arguments",
    "with_header",
    "without_header",
]

EVENTS_DIR = Path(__file__).resolve().parents[1] / "events"
TENANT_A_KEY = "rv-example-tenant-a-key"
TENANT_B_KEY = "rv-example-tenant-b-key"


@cache
def _read(name: str) -> str:
    path = (EVENTS_DIR / f"{name}.json").resolve()
    if EVENTS_DIR not in path.parents:
        raise ValueError(f"event name escapes events/: {name}")
    return path.read_text(encoding="utf-8")


def load_event(name: str) -> dict[str, Any]:
    """The event `events/<name>.json` as a new dict (callers may mutate it)."""
    data = json.loads(_read(name))
    assert isinstance(data, dict), name
    return data


def event_names(folder: str) -> list[str]:
    """Names (for `load_event`) of every event in `events/<folder>/`, sorted."""
    return sorted(f"{folder}/{p.stem}" for p in (EVENTS_DIR / folder).glob("*.json"))


def rpc_body(event: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC message in an HTTP event's body."""
    body = json.loads(event["body"])
    assert isinstance(body, dict)
    return body


def with_arguments(event: dict[str, Any], **arguments: Any) -> dict[str, Any]:
    """A copy of a `tools/call` event whose tool arguments are updated with `arguments`."""
    out = copy.deepcopy(event)
    body = rpc_body(out)
    body["params"]["arguments"] = {**body["params"].get("arguments", {}), **arguments}
    out["body"] = json.dumps(body, separators=(",", ":"))
    out["headers"]["content-length"] = str(len(out["body"].encode()))
    return out


def with_header(event: dict[str, Any], name: str, value: str) -> dict[str, Any]:
    """A copy of an HTTP event with one header set (names are lower-case in payload 2.0)."""
    out = copy.deepcopy(event)
    out["headers"][name.lower()] = value
    return out


def without_header(event: dict[str, Any], name: str) -> dict[str, Any]:
    """A copy of an HTTP event without one header."""
    out = copy.deepcopy(event)
    out["headers"].pop(name.lower(), None)
    return out

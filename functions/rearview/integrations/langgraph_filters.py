"""LangGraph's selection semantics, as `RearviewStore` applies them to the items it read.

`does_match` is a `list_namespaces` condition (a path, `*` for any label, at the start or the end);
`value_matches` is `search`'s `filter` on value fields (equality, or `$eq`/`$ne`/`$gt`/`$gte`/
`$lt`/`$lte`); `under_prefix` and `until_wildcard` read a namespace prefix.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langgraph.store.base import (
    MatchCondition,
)

from rearview.errors import InvalidInputError
from rearview.integrations.langgraph_items import Namespace


def under_prefix(namespace: Namespace, prefix: Namespace) -> bool:
    """Whether `namespace` starts with `prefix` (a namespace is under itself)."""
    return namespace[: len(prefix)] == prefix


def until_wildcard(path: Sequence[str]) -> Iterator[str]:
    """The labels of `path` before its first `*`."""
    for label in path:
        if label == "*":
            return
        yield label


def does_match(condition: MatchCondition, namespace: Namespace) -> bool:
    """LangGraph's namespace match: `path` (with `*` for any label) at the start or the end."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    start = 0 if condition.match_type == "prefix" else len(namespace) - len(path)
    labels = namespace[start : start + len(path)]
    return all(p in ("*", label) for label, p in zip(labels, path, strict=True))


def value_matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter: every field equal, or satisfying its `$eq`/`$ne`/`$gt`/`$gte`/`$lt`/`$lte`."""
    return not flt or all(_compare(value.get(field), wanted) for field, wanted in flt.items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(actual, name, operand) for name, operand in wanted.items())
        return isinstance(actual, dict) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


_ORDERED = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _operator(actual: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(actual == operand)
    if name == "$ne":
        return bool(actual != operand)
    if name not in _ORDERED:
        raise InvalidInputError("filter", f"unknown operator {name!r}", allowed=["$eq", "$ne", *_ORDERED])
    try:
        return bool(_ORDERED[name](float(actual), float(operand)))
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is not in an ordered range

"""Condition and filter expressions, each clause bound to a descriptive name before it is combined.

`Expression` hands out the placeholders of one request (`#attribute` names, `:vN` values), so
clauses built separately can be joined safely; `all_of` joins named clauses with AND.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from rearview.backends.dynamodb.codec import string_value
from rearview.backends.dynamodb.keys import sortable_time
from rearview.models import MemoryFilter

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef


class Expression:
    """Placeholders for one request: `names` and `values` go into the request as they are."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, AttributeValueTypeDef] = {}

    def name(self, attribute: str) -> str:
        """The placeholder of an attribute name (safe for reserved words like `status`)."""
        placeholder = f"#{attribute}"
        self.names[placeholder] = attribute
        return placeholder

    def value(self, value: AttributeValueTypeDef) -> str:
        """The placeholder of an attribute value."""
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def string(self, text: str) -> str:
        """The placeholder of a string value."""
        return self.value(string_value(text))

    def one_of(self, attribute: str, choices: Iterable[str]) -> str:
        return f"{self.name(attribute)} IN ({', '.join(self.string(c) for c in choices)})"


def all_of(conditions: Mapping[str, str]) -> str:
    """AND of named conditions (the names document intent; DynamoDB only sees the clauses)."""
    return " AND ".join(f"({clause})" for clause in conditions.values())


def not_expired(expr: Expression, now: datetime) -> str:
    """The item never expires or expires after `now` (TTL deletes lazily, so reads must check)."""
    expires = expr.name("expires_iso")
    return f"attribute_not_exists({expires}) OR {expires} > {expr.string(sortable_time(now))}"


def filter_conditions(
    expr: Expression, filter: MemoryFilter, covered: frozenset[str], now: datetime
) -> dict[str, str]:
    """Every `MemoryFilter.matches` criterion the index keys do not already enforce, by name.

    `covered` names the criteria the queried partitions enforce (`session`, `types`, `statuses`).
    """
    conditions = {"not_expired": not_expired(expr, now)}
    if filter.agent_id is not None:
        shared = f"{expr.name('visibility')} = {expr.string('shared')}"
        own = f"{expr.name('agent_id')} = {expr.string(filter.agent_id)}"
        conditions["visible_to_agent"] = f"{shared} OR {own}"
    if filter.session_id is not None and "session" not in covered:
        conditions["in_session"] = f"{expr.name('session_id')} = {expr.string(filter.session_id)}"
    if "types" not in covered and filter.types is not None:
        conditions["of_type"] = expr.one_of("type", (t.value for t in filter.types))
    if "statuses" not in covered:
        conditions["in_status"] = expr.one_of("status", (s.value for s in filter.statuses))
    conditions.update(_content_conditions(expr, filter))
    return conditions


def _content_conditions(expr: Expression, filter: MemoryFilter) -> dict[str, str]:
    conditions: dict[str, str] = {}
    for position, tag in enumerate(dict.fromkeys(filter.tags or ())):
        conditions[f"has_tag_{position}"] = f"contains({expr.name('tags')}, {expr.string(tag)})"
    if filter.time_from is not None:
        since = sortable_time(filter.time_from)
        conditions["event_not_before"] = f"{expr.name('event_time')} >= {expr.string(since)}"
    if filter.time_to is not None:
        until = sortable_time(filter.time_to)
        conditions["event_not_after"] = f"{expr.name('event_time')} <= {expr.string(until)}"
    if filter.scope_key is not None:
        conditions["in_scope"] = f"{expr.name('scope_key')} = {expr.string(filter.scope_key)}"
    if filter.as_of is not None:  # `models.memory.as_of_matches`
        at = expr.string(sortable_time(filter.as_of))
        conditions["written_by_as_of"] = f"{expr.name('created_at')} <= {at}"
        active = f"{expr.name('status')} = {expr.string('active')}"
        conditions["active_at_as_of"] = f"{active} OR {expr.name('updated_at')} > {at}"
    return conditions

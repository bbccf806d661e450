"""How `RearviewStore` (`rearview.integrations.langgraph`) keeps a LangGraph item in a Rearview memory.

An item `(namespace, key)` is a memory tagged `item_tag`, holding its record (namespace, key, the
value's other fields) in `metadata[item_tag]`; its namespace is one tag per prefix
(`namespace_tags`), and every item is tagged `ROOT_TAG`. `item_entries` reads the items back out
of a memory (several when writes of equal text were merged). The adapter's docstring gives the
whole mapping.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from langgraph.store.base import (
    Item,
    SearchItem,
)

from rearview.limits import MAX_LABEL_CHARS
from rearview.models import MemoryView

ROOT_TAG = "langgraph"
"""The tag on every memory this store writes: what `list_namespaces` and `search(())` list."""
RECORD = "lg:"
"""The prefix of an item's tag and of its record's metadata key (`lg:<digest>`)."""
NAMESPACE_TAG = "lg-ns:"
HASHED_NAMESPACE_TAG = "lg-ns#"


Namespace = tuple[str, ...]


@dataclass(frozen=True)
class Entry:
    """One item as a memory holds it: its place, its value, and the memory (shared by its keys)."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    memory: MemoryView

    def item(self) -> Item:
        return Item(
            value=self.value, key=self.key, namespace=self.namespace,
            created_at=self.memory.created_at, updated_at=self.memory.updated_at,
        )  # fmt: skip

    def hit(self, score: float | None) -> SearchItem:
        return SearchItem(
            namespace=self.namespace, key=self.key, value=self.value,
            created_at=self.memory.created_at, updated_at=self.memory.updated_at, score=score,
        )  # fmt: skip


def compact_json(value: Any) -> str:
    """`value` as compact JSON, non-ASCII kept: what a record holds and a digest reads."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def digest(*parts: Any) -> str:
    """A short, stable digest of `parts` (24 hex characters of SHA-256 over their JSON)."""
    return hashlib.sha256(compact_json(parts).encode()).hexdigest()[:24]


def item_tag(namespace: Namespace, key: str) -> str:
    """The tag (and record name) of the item `(namespace, key)`."""
    return RECORD + digest(list(namespace), key)


def namespace_tag(namespace: Namespace) -> str:
    """The tag of `namespace`: its labels percent-escaped, a digest when that is over a label's limit."""
    tag = NAMESPACE_TAG + "/".join(quote(label, safe="") for label in namespace)
    return tag if len(tag) <= MAX_LABEL_CHARS else HASHED_NAMESPACE_TAG + digest(list(namespace))


def is_namespace_tag(tag: str) -> bool:
    """Whether `tag` is a namespace tag (`namespace_tag`)."""
    return tag.startswith((NAMESPACE_TAG, HASHED_NAMESPACE_TAG))


def namespace_tags(namespace: Namespace) -> list[str]:
    """One tag per prefix of `namespace`, shortest first: what `search` and `list_namespaces` filter by."""
    return [namespace_tag(namespace[: n + 1]) for n in range(len(namespace))]


def prefix_tag(prefix: Namespace) -> str:
    """The tag every item under `prefix` carries: its namespace tag, `ROOT_TAG` for the empty prefix."""
    return namespace_tag(prefix) if prefix else ROOT_TAG


def record_names(memory: MemoryView) -> set[str]:
    """The metadata keys of `memory` that hold an item's record."""
    return {name for name in memory.metadata if name.startswith(RECORD)}


def item_entries(memory: MemoryView) -> list[Entry]:
    """The items a memory holds: one per record (several when writes of equal text were merged)."""
    entries = []
    for name in sorted(record_names(memory)):
        raw = memory.metadata[name]
        record = json.loads(raw) if isinstance(raw, str) else None
        if not isinstance(record, dict) or "ns" not in record or "key" not in record:
            continue  # not this store's record
        value = item_value(memory.content, record)
        entries.append(Entry(tuple(record["ns"]), str(record["key"]), value, memory))
    return entries


def item_value(content: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """The item's value: its text field (`content`) and the record's other fields, else `content` as JSON."""
    field = record.get("f")
    if isinstance(field, str):
        return {field: content, **record.get("v", {})}
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    # JSON the memory no longer holds (merged into a text one, or edited as text): its text.
    return value if isinstance(value, dict) else {"content": content}


def united(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """`first` then the labels of `second` it lacks, in order."""
    return list(dict.fromkeys([*first, *second]))

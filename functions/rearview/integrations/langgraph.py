"""LangGraph's long-term memory on Rearview: `RearviewStore`, a `langgraph.store.base.BaseStore`.

A graph compiled with `store=RearviewStore(Memory(...))` keeps what its nodes `put` as Rearview
memories, and its `store.search(namespace, query=...)` is Rearview's hybrid recall. How an item
maps onto a memory:

- an item `(namespace, key)` is one memory of the store's agent tagged `lg:<digest>` (a digest of
  namespace and key), holding the item's record in `metadata["lg:<digest>"]`: its namespace, key and
  the rest of its value. Items carry their writer: every lookup (`get`, `put`, `delete`, `search`,
  `list_namespaces`) reads only memories the store's agent wrote (the agent the `Memory` acts as, a
  server's bound key's included), so another agent's memory with the same tag is no item of this
  store, and a `put` of the same key by another agent's store is that agent's own item;
- its `namespace`, e.g. `("users", "alice")`, is a tag per prefix (`lg-ns:users`, `lg-ns:users/alice`;
  labels percent-escaped, a tag over 100 characters `lg-ns#<digest>`), and every item is tagged `langgraph`;
- its `value` is the memory's `content`: the first text field of `text_fields` (default `content`,
  then `text`), the other fields kept in the record; a value without one, or whose other fields do
  not fit a record (500 characters), is stored whole as JSON;
- `put` of a new key is `memory_write` (as the store's `type` and `visibility`; `ttl` minutes as
  `ttl_days`); of an existing key, `memory_update` (a new version of the same memory, history kept);
- the value fields `put`'s `index` names (else the store's `cue_fields`), but the text field, are
  the memory's recall cues: a string field one cue, a list of strings one cue each (at most 5, each
  at most 200 characters; they stay in the value too). A `put` with none keeps an existing memory's
  cues; one that names fields replaces them (an empty list of cues included);
- `get` lists the memory tagged with the item's digest (no ranking, no reinforcement);
- `put(..., None)` and `delete` are `memory_forget` (soft by default; `hard_delete=True` purges);
- `search(prefix, query=...)` is `memory_search` within the prefix's tag, best first, `score` being
  Rearview's score (it reinforces what it recalls, as every recall does); `alternatives=[...]` (this
  store's addition, at most 3) are other phrasings of the query. Without a query, the listing of
  the prefix's tag, newest `updated_at` first;
- `list_namespaces` reads the namespaces of the listed items, sorted.

What differs from LangGraph's `InMemoryStore`, on purpose (Rearview is a memory, not a key-value store):

- Rearview keeps one memory per statement and writer: a `put` whose text repeats (or nearly
  repeats, with no fact lost) another of the agent's memories in its scope is merged into it, and
  its key becomes one more key of that memory (its tag and record join it). `get` by either key
  answers it; updating one key detaches it into a memory of its own; deleting one key forgets the
  memory only with its last key.
- A query ranks by relevance and leaves out what is not relevant (an empty answer is a correct
  answer): it may return fewer than `limit` items. At most 50 memories are recalled per search
  (`offset + limit` beyond that is cut), and `filter` on value fields is applied to them.
- Without a query, items come newest first (not in insertion order), and `filter` reads every item
  under the prefix; `list_namespaces` reads every item of the store (under the prefix's tag when the
  prefix has no wildcard): listing is a walk, not an index.
- Against a server (`Memory(url=...)`), finding an item by key and listing read the server's
  `memory://memories` resource, a page (100) per round trip.
- Ops of one `batch` run in order (a `get` after a `put` in the same batch sees it); `abatch` runs
  the batch on a worker thread.

Example (docs/integrations.md's)::

    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.store.base import BaseStore

    from rearview import Memory
    from rearview.integrations.langgraph import RearviewStore

    store = RearviewStore(Memory(data_dir="./memories"))
    store.put(("users", "alice"), "diet", {"content": "Alice is vegetarian"})
    print(store.get(("users", "alice"), "diet").value)  # {'content': 'Alice is vegetarian'}
    print(store.search(("users",), query="is Alice vegetarian?")[0].key)  # diet


    def respond(state: MessagesState, *, store: BaseStore) -> dict:
        facts = store.search(("users", "alice"), query=state["messages"][-1].content)
        return {"messages": [("ai", "; ".join(f.value["content"] for f in facts))]}


    graph = StateGraph(MessagesState).add_node(respond).add_edge(START, "respond").compile(store=store)
    answer = graph.invoke({"messages": [("user", "what does Alice eat? is she vegetarian")]})
    print(answer["messages"][-1].content)  # Alice is vegetarian
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from rearview.client import Memory
from rearview.errors import BackendError, InvalidInputError
from rearview.integrations.langgraph_filters import does_match, under_prefix, until_wildcard, value_matches
from rearview.integrations.langgraph_items import (
    ROOT_TAG,
    Entry,
    Namespace,
    compact_json,
    is_namespace_tag,
    item_entries,
    item_tag,
    namespace_tags,
    prefix_tag,
    record_names,
    united,
)
from rearview.limits import MAX_METADATA_VALUE_CHARS, MAX_TOP_K
from rearview.models import MemoryType, MemoryView, Visibility

__all__ = ["ROOT_TAG", "RearviewStore"]


PAGE = 100
"""The listing's page (the most `Memory.browse` returns at once)."""
MINUTES_PER_DAY = 1440.0


class RearviewStore(BaseStore):
    """A LangGraph store whose items are Rearview memories (the module docstring maps one onto the other).

    `memory` is the Python API, embedded or remote (which lists through the server's listing
    resource). `type` and `visibility` are what each item is written as (default: a `semantic`
    memory every agent of the tenant sees);
    `text_fields` are the value fields tried, in order, for the memory's text; `cue_fields` the value
    fields whose text is the memory's recall cues when a `put` names no `index` (default: none);
    `hard_delete` purges a deleted item instead of forgetting it softly (restorable, kept in
    `memory_history`).
    Constructing the store does no I/O: the `Memory` opens on the first op.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Memory,
        *,
        type: MemoryType | str = MemoryType.SEMANTIC,
        visibility: Visibility | str = Visibility.SHARED,
        text_fields: Sequence[str] = ("content", "text"),
        cue_fields: Sequence[str] = (),
        hard_delete: bool = False,
    ) -> None:
        self.memory = memory
        self.type = MemoryType(type)
        self.visibility = Visibility(visibility)
        self.text_fields = tuple(text_fields)
        self.cue_fields = tuple(cue_fields)
        self.hard_delete = hard_delete
        self._agent: str | None = None
        """The agent the `Memory` acts as, as its listing says (`_writer`)."""

    # ------------------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Each op in order: a `get` or `search` after a `put` of the same batch sees the put."""
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` on a worker thread (the `Memory` is synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def search(
        self,
        namespace_prefix: Namespace,
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        alternatives: Sequence[str] | None = None,
    ) -> list[SearchItem]:
        """`BaseStore.search`, and `alternatives`: other phrasings of `query` (at most 3), recalled too."""
        refresh = (
            refresh_ttl if refresh_ttl is not None else (self.ttl_config or {}).get("refresh_on_read", True)
        )
        op = SearchOp(namespace_prefix, filter, limit, offset, query, refresh)
        validate_op_namespace(op)
        return self._search(op, _phrasings(query, alternatives))

    async def asearch(
        self,
        namespace_prefix: Namespace,
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        alternatives: Sequence[str] | None = None,
    ) -> list[SearchItem]:
        """`search` on a worker thread."""
        return await asyncio.to_thread(
            self.search, namespace_prefix, query=query, filter=filter, limit=limit, offset=offset,
            refresh_ttl=refresh_ttl, alternatives=alternatives,
        )  # fmt: skip

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            entry = self._entry(op.namespace, op.key)
            return entry.item() if entry is not None else None
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidInputError("op", f"unknown store operation {type(op).__name__}")

    # ------------------------------------------------------------------------------ get/put/delete

    def _entry(self, namespace: Namespace, key: str) -> Entry | None:
        """The item, from the newest of the agent's memories with its tag (others' are not its items)."""
        for memory in self._listed(item_tag(namespace, key)):
            found = next((e for e in item_entries(memory) if e.namespace == namespace and e.key == key), None)
            if found is not None:
                return found
        return None

    def _put(self, op: PutOp) -> None:
        current = self._entry(op.namespace, op.key)
        if op.value is None:
            if current is not None:
                self._remove(current)
            return
        content, record, text_field = self._encoded(op.namespace, op.key, op.value)
        cues = self._cues(op, text_field)
        ttl_days = None if op.ttl is None else op.ttl / MINUTES_PER_DAY
        name = item_tag(op.namespace, op.key)
        if current is not None and record_names(current.memory) == {name}:
            self.memory.update(
                current.memory.id, content=content, metadata={name: record}, ttl_days=ttl_days, cues=cues
            )
            return
        if current is not None:  # a key of a merged memory: it gets a memory of its own
            self._detach(current)
        tags = [ROOT_TAG, *namespace_tags(op.namespace), name]
        receipt = self.memory.write(
            content, type=self.type, visibility=self.visibility, tags=tags, metadata={name: record},
            ttl_days=ttl_days, cues=cues or (),
        )  # fmt: skip
        held = self.memory.get(receipt.id)
        if name not in held.tags or held.metadata.get(name) != record:
            # Merged into a memory that kept its own labels (another agent's): this key joins it.
            self.memory.update(
                held.id, tags=united(held.tags, tags), metadata={**held.metadata, name: record}
            )

    def _remove(self, entry: Entry) -> None:
        if record_names(entry.memory) == {item_tag(entry.namespace, entry.key)}:
            self.memory.forget([entry.memory.id], hard=self.hard_delete)
        else:
            self._detach(entry)

    def _detach(self, entry: Entry) -> None:
        """Take the entry's key off a memory that other keys share (its tag, record and namespace tags)."""
        name = item_tag(entry.namespace, entry.key)
        metadata = {k: v for k, v in entry.memory.metadata.items() if k != name}
        kept = {e.namespace for e in item_entries(entry.memory) if item_tag(e.namespace, e.key) != name}
        needed = {tag for ns in kept for tag in namespace_tags(ns)}
        tags = [t for t in entry.memory.tags if t != name and (not is_namespace_tag(t) or t in needed)]
        self.memory.update(entry.memory.id, tags=tags, metadata=metadata)

    def _encoded(
        self, namespace: Namespace, key: str, value: Mapping[str, Any]
    ) -> tuple[str, str, str | None]:
        """The memory's text, the item's record and the text field (None: the value is all JSON).

        A text field apart if the rest fits the record, else the whole value as JSON.
        """
        place: dict[str, Any] = {"ns": list(namespace), "key": key}
        for field in self.text_fields:
            text = value.get(field)
            if isinstance(text, str) and text.strip():
                rest = {k: v for k, v in value.items() if k != field}
                record = compact_json({**place, "f": field, "v": rest})
                if len(record) <= MAX_METADATA_VALUE_CHARS:
                    return text, record, field
                break
        record = compact_json(place)
        if len(record) > MAX_METADATA_VALUE_CHARS:
            raise InvalidInputError("key", f"namespace and key exceed {MAX_METADATA_VALUE_CHARS} characters")
        return compact_json(dict(value)), record, None

    def _cues(self, op: PutOp, text_field: str | None) -> list[str] | None:
        """The recall cues of a put: the text of the fields its `index` (else `cue_fields`) names.

        None when no field is named (an existing memory keeps its cues); `index=False` names none.
        The text field (the memory's content) and `$` (the whole value) are no cues.
        """
        fields = op.index if isinstance(op.index, list) else (self.cue_fields if op.index is None else ())
        if not fields:
            return None
        value = op.value or {}
        cues: dict[str, str] = {}  # by its text casefolded, spaces collapsed: a repeat is one cue
        for field in dict.fromkeys(fields):
            if field in (text_field, "$"):
                continue
            found = value.get(field)
            texts = [found] if isinstance(found, str) else found if isinstance(found, list) else []
            for text in texts:
                if isinstance(text, str) and text.strip():
                    cues.setdefault(" ".join(text.casefold().split()), text)
        return list(cues.values())

    # ------------------------------------------------------------------------------ search/list

    def _search(self, op: SearchOp, alternatives: list[str] | None = None) -> list[SearchItem]:
        wanted = max(op.offset, 0) + max(op.limit, 0)
        if op.query:
            found = self._recalled(op, wanted, alternatives)
        else:
            found = (
                (e, None) for m in self._listed(prefix_tag(op.namespace_prefix)) for e in item_entries(m)
            )
        hits: list[SearchItem] = []
        for entry, score in found:
            if under_prefix(entry.namespace, op.namespace_prefix) and value_matches(entry.value, op.filter):
                hits.append(entry.hit(score))
                if len(hits) >= wanted:
                    break
        return hits[op.offset : op.offset + op.limit]

    def _recalled(
        self, op: SearchOp, wanted: int, alternatives: list[str] | None
    ) -> Iterator[tuple[Entry, float | None]]:
        """The recalled memories' entries, best first: a filter or a merged key reads past `wanted`."""
        top_k = MAX_TOP_K if op.filter else min(MAX_TOP_K, max(wanted, 1))
        recall = self.memory.search(
            op.query or "", tags=[prefix_tag(op.namespace_prefix)], top_k=top_k, alternatives=alternatives
        )
        writer = self._writer()
        for hit in recall.results:
            if hit.agent_id != writer:
                continue  # another agent's memory: no item of this store, whatever its tags say
            for entry in item_entries(self.memory.get(hit.id)):
                yield entry, hit.score

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        head: Namespace = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                fixed = tuple(label for label in until_wildcard(condition.path))
                head = fixed if len(fixed) > len(head) else head
        found = {
            entry.namespace
            for memory in self._listed(prefix_tag(head))
            for entry in item_entries(memory)
            if all(does_match(c, entry.namespace) for c in op.match_conditions or ())
        }
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]

    def _listed(self, tag: str) -> Iterator[MemoryView]:
        """Every active memory of the store's agent with `tag`, newest first, a page at a time."""
        cursor: str | None = None
        while True:
            items, cursor = self._page(tag, cursor, PAGE)
            writer = self._writer()
            yield from (m for m in items if m.agent_id == writer)
            if cursor is None:
                return

    def _page(self, tag: str, cursor: str | None, limit: int) -> tuple[list[MemoryView], str | None]:
        """One page of the listing and its cursor, learning from it which agent the `Memory` acts as."""
        page = self.memory.browse(tags=[tag], cursor=cursor, limit=limit)
        self._agent = page.agent_id or self._agent
        return page.items, page.cursor

    def _writer(self) -> str:
        """The agent the store's items are written by: the one its `Memory` acts as (a listing says)."""
        if self._agent is None:
            self._page(ROOT_TAG, None, 1)
        if self._agent is None:
            raise BackendError(
                "the server's listing does not name the agent it lists for: upgrade the server"
            )
        return self._agent


def _phrasings(query: str | None, alternatives: Sequence[str] | None) -> list[str] | None:
    """A search's `alternatives` as a list (None for none); refused without a query to rephrase."""
    if alternatives is None:
        return None
    if isinstance(alternatives, str):
        raise InvalidInputError(
            "alternatives", "must be a list of phrasings, not one string (wrap it: [...])"
        )
    if not query:
        raise InvalidInputError("alternatives", "are other phrasings of `query`: give a query too")
    return list(alternatives)

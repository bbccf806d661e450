"""`Memory`: Rearview from Python, the same operations as the MCP tools, embedded or against a server.

Each method builds the service's request model (`models.py`), so a bad argument is the same
`InvalidInputError` naming the field that the tool would answer, raised before anything is sent
or written; then a transport carries it out:

- embedded (`Memory()`, `Memory(data_dir=...)`): the service `rearview serve` builds
  (`bootstrap.build_service(Settings.load(...))`) in this process, no server;
- remote (`Memory(url=..., api_key=...)`): the server's MCP endpoint, through the official `mcp`
  client, one session per `Memory`, driven synchronously from a portal thread.

Both answer with the same models, read from the same tool output: a write is a `WriteReceipt` (its
id and action, not the memory: `get` reads it), a search a `Recall` (the tool's hits and context
block). Errors are the `rearview.errors` hierarchy on both; a remote call's error is rebuilt from
the tool's message (`client/remote.py` says how exactly). Nothing connects or opens a file
until the first call; `close()` (or leaving the `with` block) releases what was opened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rearview.client.transport import SummarizeSpec, Transport
from rearview.errors import InvalidInputError
from rearview.models import (
    DEFAULT_AGENT,
    ForgetRequest,
    ForgetResult,
    HistoryResult,
    IngestMessage,
    IngestRequest,
    IngestResult,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
    MemoryView,
    SearchRequest,
    Stats,
    UpdateRequest,
    Visibility,
    WriteRequest,
)
from rearview.shared.clock import parse_time
from rearview.shared.lazy import Lazy

if TYPE_CHECKING:
    from rearview.client.results import Recall, SummaryReceipt, WriteReceipt
    from rearview.config.settings import Settings
    from rearview.service.browsing import BrowsePage
    from rearview.service.lifecycle.archival import RestoreResult

__all__ = ["Memory"]


Types = Sequence[MemoryType | str] | None
When = datetime | str | None
"""A time argument: an aware datetime, or ISO-8601 text; a naive one is taken as UTC (`clock.parse_time`)."""


class Memory:
    """Long-term memory for an agent, from Python.

    `Memory()` opens the local default data directory (`$XDG_DATA_HOME/rearview`, as `rearview serve`);
    `Memory(data_dir=...)` another one; `settings` (a `rearview.config.settings.Settings`) picks other
    backends, as the `REARVIEW_*` environment does. `Memory(url=..., api_key=...)` talks to a running
    server instead (`api_key` may be left out for a loopback server without keys). `tenant` chooses the
    tenant of an embedded store (default: the configured default tenant; a server takes it from the key).
    `agent_id` is the agent every call acts as (default: `default`, or a server's bound agent).

    Example (the README's)::

        from rearview import Memory

        with Memory(data_dir="./memories") as memory:  # or Memory(url=..., api_key=...)
            memory.write("The user prefers pnpm over npm", tags=["tooling"])
            memory.write("Deployed v2 to production on 2026-03-02", type="episodic")
            recall = memory.search("does the user prefer npm or pnpm?")
            print(recall.results[0].content)  # The user prefers pnpm over npm
            print(recall.context)  # a block ready to put in a prompt
            print(memory.stats().total)  # 2
    """

    def __init__(
        self,
        data_dir: str | PathLike[str] | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        tenant: str | None = None,
        agent_id: str | None = None,
        settings: Settings | None = None,
        timeout: float = 30.0,
    ) -> None:
        if url is not None and (data_dir is not None or settings is not None or tenant is not None):
            raise InvalidInputError(
                "url", "give a server's url, or a data_dir/settings/tenant for an embedded store, not both"
            )
        if api_key is not None and url is None:
            raise InvalidInputError("api_key", "is for a server: give its `url` too")
        self._agent = agent_id
        self._remote = url is not None
        if url is not None:
            self._open: Callable[[], Transport] = lambda: _remote(url, api_key, agent_id, timeout)
        else:
            where = Path(data_dir) if data_dir is not None else None
            self._open = lambda: _embedded(where, settings, tenant)
        self._transport = Lazy(self._open)

    # ------------------------------------------------------------------------------ operations

    def write(
        self,
        content: str,
        *,
        type: MemoryType | str = MemoryType.SEMANTIC,
        importance: int = 3,
        confidence: float = 1.0,
        tags: Sequence[str] = (),
        entities: Sequence[str] = (),
        metadata: Mapping[str, str | int | float | bool] | None = None,
        event_time: When = None,
        ttl_days: float | None = None,
        supersedes: str | None = None,
        idempotency_key: str | None = None,
        session_id: str | None = None,
        visibility: Visibility | str = Visibility.SHARED,
        cues: Sequence[str] = (),
    ) -> WriteReceipt:
        """Remember one statement (`memory_write`): created, merged into a duplicate, or superseding one.

        `cues` (at most 5, each a short phrase) are recall cues: how someone might later ask for the
        memory, in other words or another language. Searches match them beside the content; they are
        kept with the memory, attributed to this agent, never part of its content.
        """
        req = WriteRequest.model_validate(
            {
                "content": content, "type": type, "importance": importance, "confidence": confidence,
                "tags": list(tags), "entities": list(entities), "metadata": dict(metadata or {}),
                "event_time": _time(event_time, "event_time"), "ttl_days": ttl_days, "supersedes": supersedes,
                "idempotency_key": idempotency_key, "session_id": session_id, "visibility": visibility,
                "agent_id": self._acting, "cues": _phrases(cues, "cues"),
            }
        )  # fmt: skip
        return self._transport.get().write(req)

    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        types: Types = None,
        tags: Sequence[str] | None = None,
        session_id: str | None = None,
        time_from: When = None,
        time_to: When = None,
        min_score: float = 0.0,
        include_superseded: bool = False,
        include_archived: bool = False,
        reference_time: When = None,
        explain: bool = False,
        alternatives: Sequence[str] | None = None,
        as_of: When = None,
    ) -> Recall:
        """Recall relevant memories, best first, with a ready-to-inject context block (`memory_search`).

        `alternatives` (at most 3) are other phrasings of `query` (a synonym, another language): a
        memory found by any of them is recalled. As the tool does, a search reinforces the relevant
        memories it returns.

        `as_of` (a past time) answers with what was believed then: the memories active at that time,
        as they were, unreinforced (InvalidInputError naming `as_of` in the future or before the
        service's horizon, `ServiceConfig.as_of_days`).
        """
        statuses = (
            (MemoryStatus.ACTIVE,)
            + ((MemoryStatus.SUPERSEDED,) if include_superseded else ())
            + ((MemoryStatus.ARCHIVED,) if include_archived else ())
        )
        flt = _filter(session_id, types, tags, time_from, time_to, statuses)
        req = SearchRequest.model_validate(
            {
                "query": query, "filter": flt, "top_k": top_k, "min_score": min_score,
                "reference_time": _time(reference_time, "reference_time"), "agent_id": self._acting,
                "alternatives": None if alternatives is None else _phrases(alternatives, "alternatives"),
                "as_of": _time(as_of, "as_of"),
            }
        )  # fmt: skip
        return self._transport.get().search(req, explain)

    def get(self, memory_id: str) -> MemoryView:
        """One memory by id, any status (`memory_get`); NotFoundError if this agent cannot see it."""
        return self._transport.get().get(memory_id, self._acting)

    def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        tags: Sequence[str] | None = None,
        importance: int | None = None,
        confidence: float | None = None,
        metadata: Mapping[str, str | int | float | bool] | None = None,
        event_time: When = None,
        ttl_days: float | None = None,
        expected_version: int | None = None,
        cues: Sequence[str] | None = None,
        verified: bool | None = None,
    ) -> MemoryView:
        """Edit a memory in place, a new version (`memory_update`); None leaves a field as it is.

        `cues` replaces the memory's recall cues (an empty list removes them). `verified=True` records
        that this agent checked the memory and it still holds (`verified_at`), with no content change.
        """
        req = UpdateRequest.model_validate(
            {
                "memory_id": memory_id, "content": content, "tags": None if tags is None else list(tags),
                "importance": importance, "confidence": confidence,
                "metadata": None if metadata is None else dict(metadata),
                "event_time": _time(event_time, "event_time"),
                "ttl_days": ttl_days, "expected_version": expected_version, "agent_id": self._acting,
                "cues": None if cues is None else _phrases(cues, "cues"),
                "verified": verified,
            }
        )  # fmt: skip
        return self._transport.get().update(req)

    def forget(
        self,
        ids: Sequence[str] | None = None,
        *,
        session_id: str | None = None,
        types: Types = None,
        tags: Sequence[str] | None = None,
        time_from: When = None,
        time_to: When = None,
        hard: bool = False,
    ) -> ForgetResult:
        """Forget memories by id, or by filter (`memory_forget`); soft unless `hard` (then irreversible)."""
        flt = None if ids else _filter(session_id, types, tags, time_from, time_to)
        req = ForgetRequest.model_validate(
            {"ids": list(ids or []), "filter": flt, "hard": hard, "agent_id": self._acting}
        )
        return self._transport.get().forget(req)

    def restore(self, memory_id: str) -> RestoreResult:
        """Bring back an archived or soft-forgotten memory (`memory_restore`)."""
        return self._transport.get().restore(memory_id, self._acting)

    def history(self, memory_id: str) -> HistoryResult:
        """Every change to a memory, oldest first, with before/after (`memory_history`)."""
        return self._transport.get().history(memory_id, self._acting)

    def ingest(
        self,
        messages: Sequence[IngestMessage | Mapping[str, Any]],
        session_id: str,
        *,
        visibility: Visibility | str = Visibility.SHARED,
    ) -> IngestResult:
        """Keep a conversation's turns and what they say (`memory_ingest`); re-sent turns store nothing twice.

        A message is an `IngestMessage` or a mapping with its fields (`content`, and `speaker` or `role`;
        optional `timestamp`, `message_id`).
        """
        req = IngestRequest.model_validate(
            {
                "messages": [m if isinstance(m, IngestMessage) else dict(m) for m in messages],
                "session_id": session_id, "visibility": visibility, "agent_id": self._acting,
            }
        )  # fmt: skip
        return self._transport.get().ingest(req)

    def summarize(
        self,
        *,
        session_id: str | None = None,
        time_from: When = None,
        time_to: When = None,
        type: MemoryType | str = MemoryType.EPISODIC,
        summary: str | None = None,
    ) -> SummaryReceipt:
        """Consolidate a session's (or time range's) episodic memories into one (`memory_summarize`).

        `summary`: your own consolidation, stored as this agent's memory and replacing its earlier
        summary of the same sources; without it the server writes one (offline: an extract, and the
        receipt lists the `sources` to consolidate). The receipt carries the summary's text
        (`content`), who wrote it (`method`) and lineage (`source_agents`).
        """
        if session_id is None and time_from is None and time_to is None:
            raise InvalidInputError("session_id", "give a session_id or a time range (time_from/time_to)")
        flt = _filter(session_id, None, None, time_from, time_to)  # checks each field and the range
        spec = SummarizeSpec(
            flt.session_id, flt.time_from, flt.time_to, _checked_type(type), self._acting, summary
        )
        return self._transport.get().summarize(spec)

    def stats(self) -> Stats:
        """Counts of the tenant's memories by type and status, and the embedding model (`memory_stats`)."""
        return self._transport.get().stats()

    def browse(
        self,
        *,
        tags: Sequence[str] | None = None,
        session_id: str | None = None,
        types: Types = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> BrowsePage:
        """One page of the memories this agent may see, newest `updated_at` first (no query, no ranking).

        What the memory browser lists: every active memory matching the filter (all `tags`), `limit`
        (1..100) at a time; pass the page's `cursor` back for the next, None when done. A remote
        `Memory` reads the server's `memory://memories` resource (a page may then hold fewer than
        `limit` when several tags or types are given: the server filters by the first of each).
        """
        flt = _filter(session_id, types, tags, None, None)
        return self._transport.get().browse(flt, self._acting, cursor, limit)

    # ------------------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Release the store's files or the server session; a later call opens them again."""
        transport = self._transport
        if transport.built:
            transport.get().close()
        self._transport = Lazy(self._open)

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory({'remote' if self._remote else 'embedded'}, agent_id={self._acting!r})"

    @property
    def _acting(self) -> str:
        return self._agent or DEFAULT_AGENT


def _checked_type(value: MemoryType | str) -> MemoryType:
    try:
        return MemoryType(value)
    except ValueError:
        raise InvalidInputError("type", f"unknown memory type {value!r}", allowed=list(MemoryType)) from None


def _phrases(values: Sequence[str], field: str) -> list[str]:
    """`values` as a list; one string is refused (it would be read as a list of its characters)."""
    if isinstance(values, str):
        raise InvalidInputError(field, "must be a list of phrases, not one string (wrap it: [...])")
    return list(values)


def _time(value: When, field: str) -> datetime | None:
    return None if value is None else parse_time(value, field)


def _filter(
    session_id: str | None,
    types: Types,
    tags: Sequence[str] | None,
    time_from: datetime | str | None,
    time_to: datetime | str | None,
    statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,),
) -> MemoryFilter:
    """The filter search and forget build from their shared arguments (as `api/tools/base.py` does)."""
    return MemoryFilter.model_validate(
        {
            "session_id": session_id, "types": tuple(types) if types else None,
            "tags": tuple(tags) if tags else None, "time_from": _time(time_from, "time_from"),
            "time_to": _time(time_to, "time_to"),
            "statuses": statuses,
        }
    )  # fmt: skip


def _embedded(data_dir: Path | None, settings: Settings | None, tenant: str | None) -> Transport:
    from rearview.client.embedded import EmbeddedTransport

    return EmbeddedTransport.open(data_dir, settings, tenant)


def _remote(url: str, api_key: str | None, agent_id: str | None, timeout: float) -> Transport:
    from rearview.client.remote import RemoteTransport

    return RemoteTransport(url, api_key, agent_id, timeout)

"""The remote transport: a Rearview server's MCP tools, called through the official `mcp` client.

One MCP session per transport, opened on the first call and kept until `close()`. It lives in an
event loop on a portal thread (anyio's blocking portal), so each method blocks until its tool
answers: callable from plain synchronous code, from any thread.

Differences from the embedded transport, all the server's and not hidden:
- the tenant is the one the API key belongs to; the agent is the key's bound agent, else the
  `Memory`'s `agent_id`, else `default`;
- a `429`/`503` with `Retry-After` (a keyed server's tenant rate) is waited out and the request sent
  again (`client/retry_after.py`), so a bulk writer slows to the rate instead of failing;
- a call's error is rebuilt from the tool's message (`kind: message`): the same class of
  `rearview.errors` (InvalidInputError with its field, NotFoundError with its id, ...), the server's
  message as its text; a refused key is AuthenticationError, an unreachable server BackendError;
- `update` sends what the `memory_update` tool takes (no `entities`);
- `cues` (write, update) and `alternatives` (search) are sent only when given, so a `Memory` that
  does not use them still talks to a server from before they existed;
- `browse` reads the `memory://memories` resource (a listing, not a tool), which filters by one
  tag and one type: further tags and types are applied to each page here.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack, asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import httpx2
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, TextResourceContents
from pydantic import BaseModel

from rearview.client.results import Recall, SummaryReceipt, WriteReceipt, recall_of, structured_of
from rearview.client.retry_after import RetryAfterTransport
from rearview.client.transport import SummarizeSpec
from rearview.errors import (
    AuthenticationError,
    BackendError,
    BusyError,
    ConfigurationError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    NotPermittedError,
    ReadOnlyStorageError,
    RearviewError,
    StorageFullError,
)
from rearview.models import (
    ForgetRequest,
    ForgetResult,
    HistoryResult,
    IngestRequest,
    IngestResult,
    MemoryFilter,
    MemoryStatus,
    MemoryView,
    SearchRequest,
    Stats,
    UpdateRequest,
    WriteRequest,
)
from rearview.service.browsing import LISTING_URI, BrowsePage
from rearview.service.lifecycle.archival import RestoreResult

M = TypeVar("M", bound=BaseModel)

WRITE_ARGS = frozenset(
    {"content", "type", "importance", "confidence", "tags", "entities", "metadata", "event_time",
     "ttl_days", "supersedes", "idempotency_key", "session_id", "visibility", "cues"}
)  # fmt: skip
"""The `WriteRequest` fields `memory_write` takes (the agent is added apart; provenance is the server's)."""
UPDATE_ARGS = frozenset(
    {"memory_id", "content", "tags", "importance", "confidence", "metadata", "event_time", "ttl_days",
     "expected_version", "cues", "verified"}
)  # fmt: skip
"""The `UpdateRequest` fields `memory_update` takes (`cues`: only when given; an empty list clears them)."""


class RemoteTransport:
    """Calls the tools of the server at `url` (its `/mcp` endpoint), with `api_key` as a bearer key."""

    def __init__(self, url: str, api_key: str | None, agent_id: str | None, timeout: float = 30.0) -> None:
        self.url = url
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._agent = agent_id
        self._timeout = timeout
        self._stack = ExitStack()
        self._session: tuple[BlockingPortal, Client] | None = None
        self._refused: int | None = None
        """The HTTP status of the last response that refused the key (the SDK reports it as a bare error)."""

    # ------------------------------------------------------------------------------ tools

    def write(self, req: WriteRequest) -> WriteReceipt:
        args = req.model_dump(mode="json", include=set(WRITE_ARGS), exclude_none=True)
        if not args.get("cues"):
            args.pop("cues", None)  # none given: the argument stays out
        return self._model(WriteReceipt, "memory_write", self._agent_args(args))

    def search(self, req: SearchRequest, explain: bool) -> Recall:
        args: dict[str, Any] = {
            "query": req.query, "top_k": req.top_k, "min_score": req.min_score, "explain": explain,
            "include_superseded": MemoryStatus.SUPERSEDED in req.filter.statuses,
            "include_archived": MemoryStatus.ARCHIVED in req.filter.statuses,
            **_filter_args(req.filter),
        }  # fmt: skip
        if req.reference_time is not None:
            args["reference_time"] = req.reference_time.isoformat()
        if req.alternatives:
            args["alternatives"] = list(req.alternatives)
        if req.as_of is not None:
            args["as_of"] = req.as_of.isoformat()
        return recall_of(self._call("memory_search", self._agent_args(args)))

    def get(self, memory_id: str, agent_id: str) -> MemoryView:
        return self._model(MemoryView, "memory_get", self._agent_args({"memory_id": memory_id}))

    def update(self, req: UpdateRequest) -> MemoryView:
        args = req.model_dump(mode="json", include=set(UPDATE_ARGS), exclude_none=True)
        return self._model(MemoryView, "memory_update", self._agent_args(args))

    def forget(self, req: ForgetRequest) -> ForgetResult:
        args: dict[str, Any] = {"hard": req.hard}
        if req.ids:
            args["ids"] = req.ids
        if req.filter is not None:
            args.update(_filter_args(req.filter))
        return self._model(ForgetResult, "memory_forget", self._agent_args(args))

    def restore(self, memory_id: str, agent_id: str) -> RestoreResult:
        return self._model(RestoreResult, "memory_restore", self._agent_args({"memory_id": memory_id}))

    def history(self, memory_id: str, agent_id: str) -> HistoryResult:
        return self._model(HistoryResult, "memory_history", self._agent_args({"memory_id": memory_id}))

    def ingest(self, req: IngestRequest) -> IngestResult:
        args = {
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in req.messages],
            "session_id": req.session_id, "visibility": req.visibility.value,
        }  # fmt: skip
        return self._model(IngestResult, "memory_ingest", self._agent_args(args))

    def summarize(self, spec: SummarizeSpec) -> SummaryReceipt:
        args: dict[str, Any] = {"type": spec.type.value}
        if spec.session_id is not None:
            args["session_id"] = spec.session_id
        if spec.time_from is not None:
            args["time_from"] = spec.time_from.isoformat()
        if spec.time_to is not None:
            args["time_to"] = spec.time_to.isoformat()
        if spec.summary is not None:
            args["summary"] = spec.summary
        return self._model(SummaryReceipt, "memory_summarize", self._agent_args(args))

    def stats(self) -> Stats:
        return self._model(Stats, "memory_stats", {})

    def browse(self, flt: MemoryFilter, agent_id: str, cursor: str | None, limit: int) -> BrowsePage:
        """A page of the server's listing resource (`LISTING_URI`).

        The resource filters by one tag and one type: the first of each goes to the server, the rest
        are applied to the page here, so a page may hold fewer than `limit` (its cursor goes on).
        """
        query = {
            "tag": flt.tags[0] if flt.tags else None,
            "type": flt.types[0].value if flt.types else None,
            "session_id": flt.session_id,
            "cursor": cursor,
            "limit": str(limit),
            "agent_id": self._agent,
        }
        uri = (
            LISTING_URI + "?" + urlencode({k: v for k, v in query.items() if v is not None}, quote_via=quote)
        )
        portal, client = self._connected()
        try:
            result = portal.call(client.read_resource, uri)
        except MCPError as exc:
            raise rebuilt_error(exc.error.message) from exc
        except Exception as exc:
            raise self._failure(exc, f"reading {LISTING_URI} failed") from exc
        text = next((c.text for c in result.contents if isinstance(c, TextResourceContents)), "")
        page = BrowsePage.model_validate_json(text)
        kept = [m for m in page.items if _listed(m, flt)]
        return BrowsePage(items=kept, cursor=page.cursor, agent_id=page.agent_id)

    def close(self) -> None:
        """End the MCP session and stop the portal thread."""
        self._session = None
        self._stack.close()

    # ------------------------------------------------------------------------------ session

    def _agent_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """`args` with the `Memory`'s agent, if it named one (else the credential's agent acts)."""
        return args if self._agent is None else {**args, "agent_id": self._agent}

    def _model(self, model: type[M], tool: str, args: dict[str, Any]) -> M:
        return model.model_validate(structured_of(self._call(tool, args), tool))

    def _call(self, tool: str, args: dict[str, Any]) -> CallToolResult:
        """The tool's successful result; its error rebuilt as a `RearviewError` (`rebuilt_error`)."""
        portal, client = self._connected()
        try:
            result: CallToolResult = portal.call(client.call_tool, tool, args)
        except Exception as exc:
            raise self._failure(exc, f"`{tool}` failed") from exc
        if result.is_error:
            text = next((c.text for c in result.content if isinstance(c, TextContent)), "")
            raise rebuilt_error(text)
        return result

    def _connected(self) -> tuple[BlockingPortal, Client]:
        """The open session, opened now if it is not (a failed opening leaves nothing behind)."""
        if self._session is not None:
            return self._session
        stack = ExitStack()
        try:
            portal = stack.enter_context(start_blocking_portal())
            client = stack.enter_context(portal.wrap_async_context_manager(self._connect()))
        except Exception as exc:
            stack.close()
            raise self._failure(exc, "the MCP session did not open") from exc
        self._stack = stack
        self._session = (portal, client)
        return self._session

    def _failure(self, exc: Exception, what: str) -> Exception:
        """The `RearviewError` for a failure on the wire: a refused key, an unreachable server, an SDK error.

        Anything else (a bug) is returned as it is, to be re-raised.
        """
        leaf = _leaf(exc)
        if self._refused is not None:
            return AuthenticationError(f"{self.url} refused the API key (HTTP {self._refused})")
        if isinstance(leaf, httpx2.HTTPError | MCPError | OSError):
            return BackendError(f"{self.url}: {what}: {leaf or type(leaf).__name__}")
        return exc

    async def _saw(self, response: httpx2.Response) -> None:
        """Remember a refusal of the key (401/403): the SDK's error does not carry the status."""
        self._refused = response.status_code if response.status_code in (401, 403) else None

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Client]:
        hooks = {"response": [self._saw]}
        async with (
            httpx2.AsyncClient(
                headers=self._headers,
                timeout=self._timeout,
                event_hooks=hooks,
                transport=RetryAfterTransport(),  # a 429 with Retry-After is waited out, not an error
            ) as http,
            Client(streamable_http_client(self.url, http_client=http)) as client,
        ):
            yield client


def _filter_args(flt: MemoryFilter) -> dict[str, Any]:
    """The tool arguments of a filter's criteria (session, types, tags, time range), set ones only."""
    args: dict[str, Any] = {}
    if flt.session_id is not None:
        args["session_id"] = flt.session_id
    if flt.types:
        args["types"] = [t.value for t in flt.types]
    if flt.tags:
        args["tags"] = list(flt.tags)
    if flt.time_from is not None:
        args["time_from"] = flt.time_from.isoformat()
    if flt.time_to is not None:
        args["time_to"] = flt.time_to.isoformat()
    return args


def _listed(memory: MemoryView, flt: MemoryFilter) -> bool:
    """Whether a listed memory has every tag of `flt` and one of its types (the server took the first)."""
    return set(flt.tags or ()) <= set(memory.tags) and (not flt.types or memory.type in flt.types)


def _leaf(exc: BaseException) -> BaseException:
    """The first error inside anyio's task-group wrapping (`ExceptionGroup`s), or `exc` itself."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


_SDK_PREFIX = re.compile(r"^Error executing tool \S+: ")
"""What the `mcp` server SDK puts before a tool's own error message."""
_FIELD = re.compile(r"invalid `(?P<field>[^`]*)`: (?P<problem>.*)", re.DOTALL)
_NOT_FOUND = re.compile(r"memory `(?P<id>[^`]*)` not found")
_CONFLICT = re.compile(
    r"memory `(?P<id>[^`]*)` was modified concurrently \(expected version (?P<expected>\w+)"
    r"(?:, found (?P<actual>\d+))?\)"
)
_NOT_PERMITTED = re.compile(
    r"memory `(?P<id>[^`]*)` was written by agent `(?P<writer>[^`]*)`: a credential bound to another "
    r"agent may not (?P<action>.*?) it; (?P<instead>.*)",
    re.DOTALL,
)
_PLAIN: dict[str, Callable[[str], RearviewError]] = {
    "unauthenticated": AuthenticationError,
    "busy": BusyError,
    "unavailable": BackendError,
    "storage_full": StorageFullError,
    "read_only": ReadOnlyStorageError,
}


def rebuilt_error(text: str) -> RearviewError:
    """The `RearviewError` a tool error's text `[Error executing tool T: ]kind: message` stands for.

    The class is the kind's; the fields (`InvalidInputError.field`, `NotFoundError.memory_id`, ...)
    are read back from the message the error class wrote; a message in another shape, or an
    unknown kind, is a plain `RearviewError` carrying the text.
    """
    kind, _, message = _SDK_PREFIX.sub("", text, count=1).partition(": ")
    if kind in ("invalid_input", "misconfigured") and (m := _FIELD.fullmatch(message)):
        cls = InvalidInputError if kind == "invalid_input" else ConfigurationError
        return cls(m["field"], m["problem"])
    if kind == "not_found" and (m := _NOT_FOUND.fullmatch(message)):
        return NotFoundError(m["id"])
    if kind == "conflict" and (m := _CONFLICT.fullmatch(message)):
        expected = int(m["expected"]) if m["expected"].isdigit() else None
        return ConflictError(m["id"], expected, int(m["actual"]) if m["actual"] else None)
    if kind == "not_permitted" and (m := _NOT_PERMITTED.fullmatch(message)):
        return NotPermittedError(m["id"], m["writer"], m["action"], m["instead"])
    if kind in _PLAIN:
        return _PLAIN[kind](message)
    return RearviewError(text)

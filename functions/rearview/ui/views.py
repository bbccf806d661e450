"""What each page asks of the service: query and form fields -> typed service requests (pure functions).

Field names are the UI contract's (docs/local-server.md, "Memory browser"). Every value from the browser
is untrusted: each is checked here or by the service, and a bad one is an `InvalidInputError`
naming the field, which the page shows beside the form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from markupsafe import Markup, escape

from rearview.errors import InvalidInputError
from rearview.limits import MAX_IMPORTANCE, MAX_TOP_K, MIN_IMPORTANCE, AgentIdText, checked
from rearview.models import (
    DEFAULT_AGENT,
    HistoryEvent,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
    MemoryView,
    SearchRequest,
    UpdateRequest,
)
from rearview.service.browsing import MAX_BROWSE_PAGE
from rearview.shared.clock import parse_time
from rearview.ui.session import Session

Params = Mapping[str, Sequence[str]]
"""Query or form fields: each name with all its values, in order."""

DEFAULT_PAGE = 25
DEFAULT_TOP_K = 10
ALL_STATUSES = tuple(MemoryStatus)


def first(params: Params, name: str) -> str:
    """The first value of `name`, stripped ('' when absent)."""
    values = params.get(name) or ()
    return values[0].strip() if values else ""


def agent_for(session: Session, params: Params) -> str:
    """The agent whose view a page shows: the key's bound agent, else `agent_id`, else the default agent."""
    if session.agent_id is not None:
        return session.agent_id
    return checked(AgentIdText, first(params, "agent_id") or DEFAULT_AGENT, "agent_id")


def _int(params: Params, name: str, default: int, low: int, high: int) -> int:
    text = first(params, name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidInputError(name, f"must be a whole number from {low} to {high}, got {text!r}") from None
    if not low <= value <= high:
        raise InvalidInputError(name, f"must be from {low} to {high}, got {value}")
    return value


def _time(params: Params, name: str) -> datetime | None:
    text = first(params, name)
    return parse_time(text, name) if text else None


def _types(values: Sequence[str]) -> tuple[MemoryType, ...] | None:
    chosen = [v for v in values if v]
    allowed = [t.value for t in MemoryType]
    for value in chosen:
        if value not in allowed:
            raise InvalidInputError("types", f"unknown type {value!r}", allowed)
    return tuple(MemoryType(v) for v in dict.fromkeys(chosen)) or None


def split_tags(text: str) -> list[str]:
    """Comma-separated tags, blanks dropped, duplicates removed, order kept."""
    return list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


@dataclass(frozen=True, slots=True)
class SearchForm:
    """The search form's fields as given (to redisplay them) and the request they make."""

    q: str = ""
    session_id: str = ""
    types: tuple[str, ...] = ()
    tags: str = ""
    since: str = ""
    until: str = ""
    include_superseded: bool = False
    include_archived: bool = False
    limit: int = DEFAULT_TOP_K
    errors: list[str] = field(default_factory=list)

    def request(self, agent_id: str) -> SearchRequest:
        """The `memory_search` this form asks for, as `agent_id` sees it; recalls are not reinforced."""
        statuses = (
            (MemoryStatus.ACTIVE,)
            + ((MemoryStatus.SUPERSEDED,) if self.include_superseded else ())
            + ((MemoryStatus.ARCHIVED,) if self.include_archived else ())
        )
        params: dict[str, list[str]] = {"since": [self.since], "until": [self.until]}
        flt = MemoryFilter(
            session_id=self.session_id or None,
            types=_types(self.types),
            tags=tuple(split_tags(self.tags)) or None,
            time_from=_time(params, "since"),
            time_to=_time(params, "until"),
            statuses=statuses,
        )
        return SearchRequest(query=self.q, filter=flt, agent_id=agent_id, top_k=self.limit, reinforce=False)


def search_form(params: Params) -> SearchForm:
    """The search form from query fields (InvalidInputError for a bad `limit`)."""
    return SearchForm(
        q=first(params, "q"),
        session_id=first(params, "session_id"),
        types=tuple(v for v in params.get("types") or () if v),
        tags=first(params, "tags"),
        since=first(params, "since"),
        until=first(params, "until"),
        include_superseded=bool(first(params, "include_superseded")),
        include_archived=bool(first(params, "include_archived")),
        limit=_int(params, "limit", DEFAULT_TOP_K, 1, MAX_TOP_K),
    )


@dataclass(frozen=True, slots=True)
class BrowseQuery:
    """The browse page's filters as given, the filter they make, and the page size."""

    type: str = ""
    status: str = ""
    session_id: str = ""
    tag: str = ""
    cursor: str | None = None
    limit: int = DEFAULT_PAGE

    def filter(self) -> MemoryFilter:
        """The store filter (every status when none is chosen: forgotten ones can be restored)."""
        allowed = [s.value for s in MemoryStatus]
        if self.status and self.status not in allowed:
            raise InvalidInputError("status", f"unknown status {self.status!r}", allowed)
        return MemoryFilter(
            session_id=self.session_id or None,
            types=_types([self.type]),
            tags=(self.tag,) if self.tag else None,
            statuses=(MemoryStatus(self.status),) if self.status else ALL_STATUSES,
        )


def browse_query(params: Params) -> BrowseQuery:
    """The browse filters from query fields."""
    return BrowseQuery(
        type=first(params, "type"),
        status=first(params, "status"),
        session_id=first(params, "session_id"),
        tag=first(params, "tag"),
        cursor=first(params, "cursor") or None,
        limit=_int(params, "limit", DEFAULT_PAGE, 1, MAX_BROWSE_PAGE),
    )


def edit_request(
    form: Params, current: MemoryView, agent_id: str, agent_bound: bool = False
) -> UpdateRequest | None:
    """The update the edit form asks for (only fields that differ), or None when nothing changed.

    The form's `version` is the version it was shown at: a memory changed since is a ConflictError.
    `agent_bound`: the signed-in key is bound to `agent_id`, which may then edit only its own memories.
    """
    content = first(form, "content")
    tags = split_tags(first(form, "tags"))
    importance = _int(form, "importance", current.importance, MIN_IMPORTANCE, MAX_IMPORTANCE)
    version = _int(form, "version", current.version, 1, 2**62)
    req = UpdateRequest(
        memory_id=current.id,
        content=content if content and content != current.content else None,
        tags=tags if tags != current.tags else None,
        importance=importance if importance != current.importance else None,
        expected_version=version,
        agent_id=agent_id,
        agent_bound=agent_bound,
    )
    if req.content is None and req.tags is None and req.importance is None:
        return None
    return req


def forget_mode(form: Params, memory_id: str) -> bool:
    """True for a hard forget, False for a soft one; a hard one needs `confirm` equal to the memory id."""
    mode = first(form, "mode") or "soft"
    if mode not in ("soft", "hard"):
        raise InvalidInputError("mode", f"unknown mode {mode!r}", ["soft", "hard"])
    if mode == "hard" and first(form, "confirm") != memory_id:
        raise InvalidInputError("confirm", "a hard forget erases the memory for good: type its id to confirm")
    return mode == "hard"


@dataclass(frozen=True, slots=True)
class Change:
    """One field of a history event, as text: before and after."""

    field: str
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One history event as the timeline shows it: what, when, who, why, and the fields that changed."""

    action: str
    at: datetime
    actor: str | None
    note: str | None
    changes: list[Change]


def shown(value: object) -> str:
    """A history value as plain text (lists joined, absent as a dash); the template escapes it."""
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(_item(v) for v in value) or "—"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "—"
    return str(value)


def _item(value: object) -> str:
    """One item of a history list: a recall cue (`{"text", "by"}`) as its text and author."""
    if isinstance(value, dict) and value.keys() == {"text", "by"}:
        return f"{value['text']} (by {value['by']})"
    return str(value)


def timeline(events: Sequence[HistoryEvent]) -> list[TimelineEntry]:
    """The events oldest first, each with the fields whose value differs between before and after."""
    entries = []
    for event in events:
        before, after = event.before or {}, event.after or {}
        names = list(dict.fromkeys([*before, *after]))
        changes = [
            Change(n, shown(before.get(n)), shown(after.get(n)))
            for n in names
            if before.get(n) != after.get(n)
        ]
        entries.append(TimelineEntry(event.action.value, event.at, event.actor, event.note, changes))
    return entries


MEMORY_ID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
"""A memory id (a ULID) in a history note: "superseded by 01J...", "supersedes 01J...", "not merged into"."""


def linked_ids(text: str, suffix: str = "") -> Markup:
    """`text` escaped, with each memory id in it a link to that memory's page (`suffix`: its query string)."""
    parts: list[Markup] = []
    last = 0
    for m in MEMORY_ID.finditer(text):
        parts.append(escape(text[last : m.start()]))
        parts.append(Markup('<a href="/ui/memories/{0}{1}">{0}</a>').format(m[0], suffix))
        last = m.end()
    parts.append(escape(text[last:]))
    return Markup("").join(parts)

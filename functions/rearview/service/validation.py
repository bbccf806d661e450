"""Input checks the service applies to every caller (MCP, CLI, import, Lambda jobs).

Each failure is an `InvalidInputError` naming the field and the limit (the table in `models.py`);
nothing is written before all checks pass. The MCP tools refuse the same inputs earlier, from
their argument schemas; these checks hold the callers that do not come through them.
"""

from __future__ import annotations

from collections.abc import Sequence

from rearview.errors import InvalidInputError
from rearview.models import (
    MAX_AGENT_ID_CHARS,
    MAX_CONTENT_CHARS,
    MAX_FILTER_IDS,
    MAX_ID_CHARS,
    MAX_LABEL_CHARS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    MAX_QUERY_CHARS,
    MAX_SESSION_ID_CHARS,
    MAX_TAGS,
    MAX_TOP_K,
    MAX_TTL_DAYS,
    MemoryFilter,
    MetadataValue,
    control_chars_problem,
    identifier_chars_problem,
    metadata_bytes_problem,
    query_terms_problem,
)


def check_text(text: str, field: str, max_chars: int) -> str:
    """`text` if it is 1..`max_chars` characters of plain text (no control character but tab, LF, CR)."""
    if not text:
        raise InvalidInputError(field, "must not be empty")
    if len(text) > max_chars:
        raise InvalidInputError(field, f"is {len(text)} characters; the limit is {max_chars}")
    problem = control_chars_problem(text)
    if problem:
        raise InvalidInputError(field, problem)
    return text


def check_content(content: str, field: str = "content") -> str:
    """Stripped content; empty, over `MAX_CONTENT_CHARS` or with control characters is an error."""
    text = content.strip()
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            field,
            f"is {len(text)} characters; the limit is {MAX_CONTENT_CHARS} (store one distilled statement)",
        )
    return check_text(text, field, MAX_CONTENT_CHARS)


def check_query(query: str) -> str:
    """Stripped query: 1..`MAX_QUERY_CHARS` characters, at most `MAX_QUERY_TERMS` distinct terms."""
    text = check_text(query.strip(), "query", MAX_QUERY_CHARS)
    problem = query_terms_problem(text)
    if problem:
        raise InvalidInputError("query", problem)
    return text


def check_identifier(text: str, field: str, max_chars: int) -> str:
    """`check_text`, and no invisible formatting character (`models.identifier_chars_problem`)."""
    problem = identifier_chars_problem(check_text(text, field, max_chars))
    if problem:
        raise InvalidInputError(field, problem)
    return text


def check_agent_id(agent_id: str) -> str:
    """An agent id of 1..`MAX_AGENT_ID_CHARS` characters of plain, visible text."""
    return check_identifier(agent_id, "agent_id", MAX_AGENT_ID_CHARS)


def check_session_id(session_id: str | None) -> str | None:
    """None, or a session id of 1..`MAX_SESSION_ID_CHARS` characters of plain, visible text."""
    return None if session_id is None else check_identifier(session_id, "session_id", MAX_SESSION_ID_CHARS)


def check_labels(values: Sequence[str], field: str) -> list[str]:
    """Tags/entities: stripped, de-duplicated in order, bounded in count and length, plain text."""
    cleaned = list(dict.fromkeys(v.strip() for v in values if v.strip()))
    if len(cleaned) > MAX_TAGS:
        raise InvalidInputError(field, f"has {len(cleaned)} items; the limit is {MAX_TAGS}")
    for value in cleaned:
        if len(value) > MAX_LABEL_CHARS:
            raise InvalidInputError(field, f"item {value[:20]!r}... exceeds {MAX_LABEL_CHARS} characters")
        check_identifier(value, field, MAX_LABEL_CHARS)
    return cleaned


def check_metadata(metadata: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
    """Flat key -> scalar, bounded in keys, key and value length, and total size."""
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInputError("metadata", f"has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}")
    for key, value in metadata.items():
        if not key or len(key) > MAX_LABEL_CHARS:
            raise InvalidInputError("metadata", f"key {key[:20]!r} must be 1..{MAX_LABEL_CHARS} characters")
        check_text(key, "metadata", MAX_LABEL_CHARS)
        if not isinstance(value, str | int | float | bool):
            raise InvalidInputError(f"metadata.{key}", "must be a string, number or boolean")
        if isinstance(value, str) and len(value) > MAX_METADATA_VALUE_CHARS:
            raise InvalidInputError(f"metadata.{key}", f"exceeds {MAX_METADATA_VALUE_CHARS} characters")
        if isinstance(value, str) and value:
            check_text(value, f"metadata.{key}", MAX_METADATA_VALUE_CHARS)
    problem = metadata_bytes_problem(metadata)
    if problem:
        raise InvalidInputError("metadata", problem)
    return dict(metadata)


def check_filter(flt: MemoryFilter) -> MemoryFilter:
    """A caller's filter: its agent, session and tags within the limits (a backend never sees more)."""
    if flt.agent_id is not None:
        check_agent_id(flt.agent_id)
    check_session_id(flt.session_id)
    if flt.tags is not None:
        if len(flt.tags) > MAX_TAGS:
            raise InvalidInputError("tags", f"has {len(flt.tags)} items; the limit is {MAX_TAGS}")
        for tag in flt.tags:
            check_text(tag, "tags", MAX_LABEL_CHARS)
    return flt


def check_ids(ids: Sequence[str]) -> list[str]:
    """Distinct memory ids, at most `MAX_FILTER_IDS` of them."""
    distinct = list(dict.fromkeys(ids))
    if len(distinct) > MAX_FILTER_IDS:
        raise InvalidInputError("ids", f"has {len(distinct)} items; the limit is {MAX_FILTER_IDS}")
    return [check_id(i, "ids") for i in distinct]


def check_ttl_days(ttl_days: float | None) -> float | None:
    """A positive number of days, at most `MAX_TTL_DAYS`, or None for the retention policy."""
    if ttl_days is not None and not (0 < ttl_days <= MAX_TTL_DAYS):
        raise InvalidInputError("ttl_days", f"must be > 0 and <= {MAX_TTL_DAYS} (got {ttl_days})")
    return ttl_days


def check_top_k(top_k: int) -> int:
    """1..MAX_TOP_K."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise InvalidInputError("top_k", f"must be between 1 and {MAX_TOP_K} (got {top_k})")
    return top_k


def check_id(value: str, field: str = "memory_id") -> str:
    """A non-empty id of sane length."""
    if not value or len(value) > MAX_ID_CHARS:
        raise InvalidInputError(field, f"must be a memory id (1..{MAX_ID_CHARS} characters)")
    return value

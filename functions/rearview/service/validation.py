"""Input checks the service applies to every caller (MCP, CLI, import, Lambda jobs).

Each failure is an `InvalidInputError` naming the field; nothing is written before all checks pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from rearview.errors import InvalidInputError
from rearview.models import (
    MAX_CONTENT_CHARS,
    MAX_LABEL_CHARS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    MAX_TAGS,
    MAX_TOP_K,
    MAX_TTL_DAYS,
    MetadataValue,
)


def check_content(content: str, field: str = "content") -> str:
    """Stripped content; empty or over `MAX_CONTENT_CHARS` is an error (never truncated)."""
    text = content.strip()
    if not text:
        raise InvalidInputError(field, "must not be empty")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            field,
            f"is {len(text)} characters; the limit is {MAX_CONTENT_CHARS} (store one distilled statement)",
        )
    return text


def check_labels(values: Sequence[str], field: str) -> list[str]:
    """Tags/entities: stripped, de-duplicated in order, bounded in count and length."""
    cleaned = list(dict.fromkeys(v.strip() for v in values if v.strip()))
    if len(cleaned) > MAX_TAGS:
        raise InvalidInputError(field, f"has {len(cleaned)} items; the limit is {MAX_TAGS}")
    for value in cleaned:
        if len(value) > MAX_LABEL_CHARS:
            raise InvalidInputError(field, f"item {value[:20]!r}... exceeds {MAX_LABEL_CHARS} characters")
    return cleaned


def check_metadata(metadata: dict[str, MetadataValue]) -> dict[str, MetadataValue]:
    """Flat key -> scalar, bounded."""
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInputError("metadata", f"has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}")
    for key, value in metadata.items():
        if not key or len(key) > MAX_LABEL_CHARS:
            raise InvalidInputError("metadata", f"key {key[:20]!r} must be 1..{MAX_LABEL_CHARS} characters")
        if not isinstance(value, str | int | float | bool):
            raise InvalidInputError(f"metadata.{key}", "must be a string, number or boolean")
        if isinstance(value, str) and len(value) > MAX_METADATA_VALUE_CHARS:
            raise InvalidInputError(f"metadata.{key}", f"exceeds {MAX_METADATA_VALUE_CHARS} characters")
    return dict(metadata)


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
    if not value or len(value) > 64:
        raise InvalidInputError(field, "must be a memory id (1..64 characters)")
    return value

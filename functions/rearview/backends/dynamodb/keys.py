"""Key construction for the DynamoDB table: every key part escaped, every partition under its tenant.

Escaping (`%` → `%25`, `#` → `%23`) means no tenant, session, scope, job or idempotency key can
spell another one's key; every partition key but the tenant registry's starts with `T#<tenant>`,
so each query is scoped to one tenant by construction.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from rearview.models import Memory, MemoryStatus, MemoryType

MEMORY_SK: Final = "MEMORY"
RECALL_SK: Final = "RECALL"
"""A memory's recall bookkeeping (`recall`): sorts right after `MEMORY` in its collection, nothing between."""
DUE_SK: Final = "DUE"
"""A memory's place in the lifecycle jobs' due orders (`due`): the only item their GSIs index."""
IDEMPOTENCY_SK: Final = "IDEM"
CHECKPOINT_SK: Final = "CHECKPOINT"
HISTORY_PREFIX: Final = "H#"
LINEAGE_PREFIX: Final = "D#"
REGISTRY_PK: Final = "REGISTRY#TENANTS"


def escape(part: str) -> str:
    """One key component, escaped so it can never contain the `#` separator."""
    return part.replace("%", "%25").replace("#", "%23")


def join_escaped(*parts: str) -> str:
    """Key components joined by `#`, each escaped."""
    return "#".join(escape(p) for p in parts)


def sortable_time(when: datetime) -> str:
    """Fixed-width ISO-8601 UTC with microseconds: lexicographic order == chronological order."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def optional_sortable_time(when: datetime | None) -> str | None:
    """`sortable_time`, or None for no time (how `expires_iso` compares when absent)."""
    return None if when is None else sortable_time(when)


def tenant_pk(tenant_id: str) -> str:
    """`T#<tenant>`: the prefix of every tenant-scoped key; `gsi1pk` of memory items."""
    return "T#" + escape(tenant_id)


def memory_pk(tenant_id: str, memory_id: str) -> str:
    """`T#<tenant>#M#<id>`: the item collection of a memory and its history."""
    return tenant_pk(tenant_id) + "#M#" + escape(memory_id)


def history_sk(version: int, event_id: str) -> str:
    """Sorts a memory's events by version, then event id."""
    return f"{HISTORY_PREFIX}{version:010d}#{escape(event_id)}"


def lineage_sk(derived_id: str) -> str:
    """`D#<id>`: in a source memory's item collection, one memory derived from it."""
    return LINEAGE_PREFIX + escape(derived_id)


def hash_lookup_pk(tenant_id: str, scope_key: str, content_hash: str) -> str:
    """`T#<tenant>#HASH#<scope_key>#<hash>`: the content-hash lookups of one scope."""
    return tenant_pk(tenant_id) + "#HASH#" + join_escaped(scope_key, content_hash)


def hash_lookup_sk(memory_id: str) -> str:
    """`M#<id>`: one memory among those sharing a content hash."""
    return "M#" + escape(memory_id)


def idempotency_pk(tenant_id: str, key: str) -> str:
    """`T#<tenant>#IDEM#<key>`: the owner of an idempotency key."""
    return tenant_pk(tenant_id) + "#IDEM#" + escape(key)


def checkpoint_pk(tenant_id: str, job: str) -> str:
    """`T#<tenant>#JOB#<job>`: one lifecycle job's checkpoint for one tenant."""
    return tenant_pk(tenant_id) + "#JOB#" + escape(job)


def session_pk(tenant_id: str, session_id: str) -> str:
    """`T#<tenant>#S#<session>`: `gsi2pk` of a memory with a session."""
    return tenant_pk(tenant_id) + "#S#" + escape(session_id)


def type_status_pk(tenant_id: str, memory_type: MemoryType, status: MemoryStatus) -> str:
    """`T#<tenant>#<type>#<status>`: `gsi3pk` of a memory."""
    return tenant_pk(tenant_id) + "#" + join_escaped(memory_type.value, status.value)


def due_pk(tenant_id: str, job: str) -> str:
    """`T#<tenant>#DUE#<job>`: `gsi4pk` (archive: by expiry) or `gsi5pk` (decay: by fade time)."""
    return tenant_pk(tenant_id) + "#DUE#" + escape(job)


def due_key(when: datetime, memory_id: str) -> str:
    """The due GSIs' sort key: `<when>#<id>`, soonest first."""
    return f"{sortable_time(when)}#{escape(memory_id)}"


def updated_key(memory: Memory) -> str:
    """The GSI sort key: newest-first listings order by it, and cursors resume past it."""
    return f"{sortable_time(memory.updated_at)}#{escape(memory.id)}"

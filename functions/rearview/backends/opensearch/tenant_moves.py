"""Moving one tenant's documents between the shared index and its own (`rearview move-tenant`).

A move is two steps around a change of `REARVIEW_OPENSEARCH_DEDICATED_TENANTS` (docs/scale.md):
`copy_tenant` before it (the engine's `_reindex` of the tenant's documents, vectors included, with
their memory versions), `remove_tenant` after it (the copies left where the tenant no longer is).
Both are idempotent: a copy never replaces a newer version than its own (`version_type:
external_gte`, conflicts counted, not failed) and rewrites the same version as it was; removing what
is gone is a no-op. A copy back within `index.gc_deletes` (60 s) of a removal meets the removed
documents' delete markers, which outrank it: `copy_tenant` then says so and asks to wait.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from opensearchpy.exceptions import OpenSearchException

from rearview.backends.opensearch.index import OpenSearchMemoryIndex
from rearview.backends.opensearch.queries import as_mapping
from rearview.backends.opensearch.tenant_indexes import dedicated_alias
from rearview.errors import IndexUnavailableError, InvalidInputError

__all__ = ["MOVE_TIMEOUT_S", "CopyReport", "copy_tenant", "own_index", "remove_tenant"]

MOVE_TIMEOUT_S = 3600.0
"""How long one `_reindex` or `_delete_by_query` may run (a 100k-memory tenant takes minutes)."""
_POLL_S = 1.0
"""Between two looks at a running task."""


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What a copy did: documents of the tenant in the source, written, skipped (newer there already)."""

    source_docs: int
    written: int
    skipped: int


def own_index(shared: OpenSearchMemoryIndex, tenant_id: str) -> OpenSearchMemoryIndex:
    """The adapter of `tenant_id`'s own index (`dedicated_alias`), on `shared`'s client. No I/O."""
    alias = dedicated_alias(shared.config.alias, tenant_id)
    return OpenSearchMemoryIndex(replace(shared.config, alias=alias), shared.client)


def copy_tenant(source: OpenSearchMemoryIndex, dest: OpenSearchMemoryIndex, tenant_id: str) -> CopyReport:
    """Copy every document of `tenant_id` from `source`'s alias into `dest`'s (created if missing).

    Keeps each document's `_id` and memory version: a document `dest` holds at a newer version is
    skipped, so the copy may be re-run. Raises InvalidInputError naming `mode` on Serverless (no
    `_reindex` there: after the setting changes, `rearview reconcile --tenant` fills the tenant's
    index from the store); IndexUnavailableError when the engine fails, a document fails to copy,
    or `dest` ends up holding fewer of the tenant's documents than the source (it removed them
    under a minute ago: see the module docstring).
    """
    _check_mode(source)
    dest.ensure_schema()
    version = dest.current_version()
    assert version is not None  # ensure_schema made the alias
    body = {
        "source": {"index": source.config.alias, "query": {"term": {"tenant_id": tenant_id}}},
        "dest": {"index": dest.config.index_name(version), "version_type": "external_gte"},
        "conflicts": "proceed",
    }
    response = _run_task(
        source,
        "copy tenant",
        lambda: source.client.reindex(
            body=body,
            refresh=True,
            wait_for_completion=False,
            request_timeout=source.config.bulk_timeout_s,
        ),
    )
    total, held = _int(response, "total"), dest.count(tenant_id)
    if held < total:
        raise IndexUnavailableError(
            f"{total - held} of the tenant's {total} documents were not copied to {dest.config.alias}:"
            " they were removed from there within `index.gc_deletes` (60 s), and their delete markers"
            " outrank the copies; run the command again in a minute"
        )
    written = _int(response, "created") + _int(response, "updated")
    return CopyReport(total, written, _int(response, "version_conflicts"))


def remove_tenant(index: OpenSearchMemoryIndex, tenant_id: str) -> int:
    """Delete every document of `tenant_id` from `index`'s alias; returns how many (0 when none are left)."""
    _check_mode(index)
    response = _run_task(
        index,
        "remove tenant",
        lambda: index.client.delete_by_query(
            index=index.config.alias,
            body={"query": {"term": {"tenant_id": tenant_id}}},
            conflicts="proceed",
            refresh=True,
            wait_for_completion=False,
            request_timeout=index.config.bulk_timeout_s,
        ),
    )
    return _int(response, "deleted")


def _check_mode(index: OpenSearchMemoryIndex) -> None:
    if index.config.mode == "serverless":
        raise InvalidInputError(
            "mode",
            "a Serverless collection has no _reindex: change the setting, then `rearview reconcile"
            " --tenant` fills the tenant's index from the store",
        )


def _run_task(index: OpenSearchMemoryIndex, action: str, start: Any) -> Mapping[str, Any]:
    """Start `action` as an engine task, poll it to the end, and return its response.

    Any document the task failed on (the response's `failures`) is an error.

    A task, not one request held open for minutes: no proxy or client timeout cuts it, and a
    transport retry of a long request cannot start the work a second time.
    """
    deadline = time.monotonic() + MOVE_TIMEOUT_S
    try:
        task = as_mapping(start()).get("task")
        if not isinstance(task, str):
            raise IndexUnavailableError(f"OpenSearch {action} started no task")
        while True:
            status = as_mapping(
                index.client.tasks.get(task_id=task, request_timeout=index.config.bulk_timeout_s)
            )
            if status.get("completed"):
                if status.get("error"):
                    raise IndexUnavailableError(f"OpenSearch {action} failed: {status['error']}")
                response = as_mapping(status.get("response"))
                failures = response.get("failures")
                if isinstance(failures, list) and failures:
                    raise IndexUnavailableError(
                        f"OpenSearch {action}: {len(failures)} failed, first: {failures[0]}"
                    )
                return response
            if time.monotonic() > deadline:
                raise IndexUnavailableError(f"OpenSearch {action} still running after {MOVE_TIMEOUT_S:.0f} s")
            time.sleep(_POLL_S)
    except OpenSearchException as exc:
        raise IndexUnavailableError(f"OpenSearch {action} failed: {exc}") from exc


def _int(response: Mapping[str, Any], key: str) -> int:
    value = response.get(key)
    return value if isinstance(value, int) else 0

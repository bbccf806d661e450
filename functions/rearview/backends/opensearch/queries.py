"""What the search channels share (their filter), the id lookup, and reading the answers.

Both channels carry the same `filter_clauses`; the vector channel carries them *inside* each
`knn` clause (the content's, and the recall cues' nested one), so the engine's efficient filtering
returns `limit` hits whenever that many match and nothing is post-filtered. Response readers
tolerate missing or malformed parts (a part that is not an object reads as empty) and keep the
first hit per memory id. Each channel's bodies are in `keyword_queries` and `vector_queries`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from rearview.backends.opensearch.mapping import (
    CONTEXT_FIELD,
    CUE_VECTORS_FIELD,
    CUES_FIELD,
    Json,
    epoch_us,
)
from rearview.errors import IndexUnavailableError

if TYPE_CHECKING:
    from rearview.models import MemoryFilter


__all__ = [
    "KEPT_FIELDS",
    "LOOKUP_FIELDS",
    "MAX_WINDOW",
    "as_mapping",
    "cosine",
    "filter_clauses",
    "hit_list",
    "lookup_body",
    "raise_on_error",
    "ranked",
    "versions_body",
    "versions_page",
]


MAX_WINDOW: Final = 10_000  # index.max_result_window and the k-NN `k` ceiling


LOOKUP_FIELDS: Final = ["memory_id", "memory_version", "content_hash"]
"""What a write reads of an existing document (plus `KEPT_FIELDS` when it must keep them)."""
KEPT_FIELDS: Final = ["content", CONTEXT_FIELD, "vector", CUES_FIELD, CUE_VECTORS_FIELD]
"""What a vector-less update keeps of the document it replaces (the recall cues unless it brings new ones)."""


def filter_clauses(tenant_id: str, flt: MemoryFilter) -> list[Json]:
    """`MemoryFilter.matches` as bool-filter clauses, always led by the tenant term."""
    clauses: list[Json] = [{"term": {"tenant_id": tenant_id}}]
    if flt.agent_id is not None:
        clauses.append(
            {
                "bool": {
                    "should": [{"term": {"visibility": "shared"}}, {"term": {"agent_id": flt.agent_id}}],
                    "minimum_should_match": 1,
                }
            }
        )
    if flt.session_id is not None:
        clauses.append({"term": {"session_id": flt.session_id}})
    if flt.types is not None:
        clauses.append({"terms": {"type": [t.value for t in flt.types]}})
    clauses.extend({"term": {"tags": tag}} for tag in dict.fromkeys(flt.tags or ()))
    bounds: Json = {}
    if flt.time_from is not None:
        bounds["gte"] = epoch_us(flt.time_from)
    if flt.time_to is not None:
        bounds["lte"] = epoch_us(flt.time_to)
    if bounds:
        clauses.append({"range": {"event_time_us": bounds}})
    clauses.append({"terms": {"status": [s.value for s in flt.statuses]}})
    if flt.scope_key is not None:
        clauses.append({"term": {"scope_key": flt.scope_key}})
    if flt.as_of is not None:
        clauses.extend(as_of_clauses(epoch_us(flt.as_of)))
    return clauses


def as_of_clauses(at: int) -> list[Json]:
    """`models.memory.as_of_matches` at `at` (epoch µs): written by then, active now or changed since.

    A document indexed before the times were kept (no `created_at_us`) passes: its history decides.
    """

    def unless_missing(field: str, clause: Json) -> Json:
        missing = {"bool": {"must_not": {"exists": {"field": field}}}}
        return {"bool": {"should": [clause, missing], "minimum_should_match": 1}}

    changed_since = {"range": {"updated_at_us": {"gt": at}}}
    return [
        unless_missing("created_at_us", {"range": {"created_at_us": {"lte": at}}}),
        {
            "bool": {
                "should": [{"term": {"status": "active"}}, unless_missing("updated_at_us", changed_since)],
                "minimum_should_match": 1,
            }
        },
    ]


def lookup_body(tenant_id: str, memory_ids: Sequence[str], *, with_vector: bool) -> Json:
    """Every document of the tenant's `memory_ids` (up to 4 copies each), with `KEPT_FIELDS` if asked."""
    return {
        "size": min(MAX_WINDOW, 4 * len(memory_ids)),
        "_source": [*LOOKUP_FIELDS, *KEPT_FIELDS] if with_vector else LOOKUP_FIELDS,
        "query": {
            "bool": {
                "filter": [{"term": {"tenant_id": tenant_id}}, {"terms": {"memory_id": list(memory_ids)}}]
            }
        },
    }


def versions_body(tenant_id: str, after: str | None, size: int) -> Json:
    """A composite aggregation: the tenant's memory ids in order, each with its lowest indexed version."""
    composite: Json = {"size": size, "sources": [{"memory_id": {"terms": {"field": "memory_id"}}}]}
    if after is not None:
        composite["after"] = {"memory_id": after}
    return {
        "size": 0,
        "track_total_hits": False,
        "query": {"term": {"tenant_id": tenant_id}},
        "aggs": {"ids": {"composite": composite, "aggs": {"version": {"min": {"field": "memory_version"}}}}},
    }


def versions_page(response: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(memory_id, version) of a `versions_body` answer, in order (0 where no version was indexed)."""
    buckets = as_mapping(as_mapping(response.get("aggregations")).get("ids")).get("buckets")
    out: list[tuple[str, int]] = []
    for bucket in buckets if isinstance(buckets, list) else []:
        mid = as_mapping(as_mapping(bucket).get("key")).get("memory_id")
        version = as_mapping(as_mapping(bucket).get("version")).get("value")
        if isinstance(mid, str):
            out.append((mid, int(version) if isinstance(version, int | float) else 0))
    return out


def ranked(result: Mapping[str, Any], limit: int) -> list[tuple[str, float]]:
    """(memory_id, engine score) of one msearch response, best first, first hit per memory id."""
    raise_on_error(result)
    seen: set[str] = set()
    out: list[tuple[str, float]] = []
    for hit in hit_list(result):
        mid = as_mapping(hit.get("_source")).get("memory_id")
        score = hit.get("_score")
        if isinstance(mid, str) and mid not in seen and isinstance(score, int | float):
            seen.add(mid)
            out.append((mid, float(score)))
    return out[:limit]


def raise_on_error(result: Mapping[str, Any]) -> None:
    """Raise IndexUnavailableError if the engine reported an error in this (msearch) response."""
    error = result.get("error")
    if error is not None:
        raise IndexUnavailableError(f"OpenSearch search failed: {error!r:.500}")


def hit_list(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The `hits.hits` of a search response (empty when absent)."""
    hits = as_mapping(response.get("hits")).get("hits")
    return [as_mapping(h) for h in hits] if isinstance(hits, list) else []


def cosine(score: float) -> float:
    """Cosine similarity from a `cosinesimil` k-NN score, which every engine reports as (1 + cos) / 2."""
    return min(1.0, max(-1.0, 2.0 * score - 1.0)) if math.isfinite(score) else -1.0


def as_mapping(value: object) -> Mapping[str, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}

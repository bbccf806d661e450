"""Search request bodies (the two channels, their shared filter, the id lookup) and reading the answers.

Both channels carry the same `filter_clauses`; the vector channel carries them *inside* the
`knn` clause, so the engine's efficient filtering returns `limit` hits whenever that many match
and nothing is post-filtered. Response readers tolerate missing or malformed parts (a part that
is not an object reads as empty) and keep the first hit per memory id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from rearview.backends.opensearch.mapping import CONTEXT_FIELD, INDEX_ANALYZER, Json, epoch_us
from rearview.errors import IndexUnavailableError
from rearview.ports import CONTEXT_WEIGHT
from rearview.text import query_tokens

if TYPE_CHECKING:
    from rearview.models import MemoryFilter
    from rearview.ports import IndexQuery, Vector

__all__ = [
    "KEPT_FIELDS",
    "LOOKUP_FIELDS",
    "MAX_WINDOW",
    "as_mapping",
    "cosine",
    "filter_clauses",
    "hit_list",
    "keyword_body",
    "lookup_body",
    "ranked",
    "vector_body",
    "versions_body",
    "versions_page",
]

MAX_WINDOW: Final = 10_000  # index.max_result_window and the k-NN `k` ceiling
LOOKUP_FIELDS: Final = ["memory_id", "memory_version", "content_hash"]
"""What a write reads of an existing document (plus `KEPT_FIELDS` when it must keep them)."""
KEPT_FIELDS: Final = ["content", CONTEXT_FIELD, "vector"]
"""What a vector-less update keeps of the document it replaces."""


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
    return clauses


def keyword_body(query: IndexQuery, text: str) -> Json:
    """The BM25 channel: `match` on `content` or on `context` (boost `CONTEXT_WEIGHT`), bool-filtered.

    The query is what SQLite's keyword channel searches: the distinct non-stopword tokens of
    `text.query_tokens` (all of them if only stopwords), any of which matches, analyzed as the
    documents were. A document matches through either field; the scores of both add up (as FTS5's
    column weights do, though each field has its own document frequencies and length norm here:
    the two rankings agree closely but not exactly, see tests/contract/test_ranking_parity.py).
    """
    match: Json = {"query": " ".join(query_tokens(text)), "analyzer": INDEX_ANALYZER}
    return {
        "size": query.limit,
        "track_total_hits": False,
        "_source": ["memory_id"],
        "query": {
            "bool": {
                "should": [
                    {"match": {"content": match}},
                    {"match": {CONTEXT_FIELD: {**match, "boost": CONTEXT_WEIGHT}}},
                ],
                "minimum_should_match": 1,
                "filter": filter_clauses(query.tenant_id, query.filter),
            }
        },
    }


def vector_body(query: IndexQuery, vector: Vector, ef_search: int | None) -> Json:
    """The vector channel: a `knn` query with the filter inside it (`ef_search` None: engine default)."""
    knn: Json = {
        "vector": vector.tolist(),
        "k": query.limit,
        "filter": {"bool": {"filter": filter_clauses(query.tenant_id, query.filter)}},
    }
    if ef_search is not None:
        knn["method_parameters"] = {"ef_search": max(ef_search, query.limit)}
    return {
        "size": query.limit,
        "track_total_hits": False,
        "_source": ["memory_id"],
        "query": {"knn": {"vector": knn}},
    }


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
    error = result.get("error")
    if error is not None:
        raise IndexUnavailableError(f"OpenSearch search failed: {error!r:.500}")
    seen: set[str] = set()
    out: list[tuple[str, float]] = []
    for hit in hit_list(result):
        mid = as_mapping(hit.get("_source")).get("memory_id")
        score = hit.get("_score")
        if isinstance(mid, str) and mid not in seen and isinstance(score, int | float):
            seen.add(mid)
            out.append((mid, float(score)))
    return out[:limit]


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

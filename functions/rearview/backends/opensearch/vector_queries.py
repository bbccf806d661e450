"""The vector (k-NN) channel on OpenSearch: the content's and the cues' `knn` queries, and their answer.

The shared filter (`queries.filter_clauses`) is inside each `knn` clause, so the engine's efficient
filtering returns `limit` hits whenever that many match. `vector_ranked` reads cosines and which
cue, if any, carried each hit's score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from rearview.backends.opensearch.mapping import CUE_VECTORS_FIELD, Json
from rearview.backends.opensearch.queries import as_mapping, cosine, filter_clauses, hit_list, ranked

if TYPE_CHECKING:
    from rearview.ports import IndexQuery, Vector

__all__ = ["vector_body", "vector_ranked"]


CARRIER_HITS: Final = "cue"
"""The name of the nested cue query's inner hits: the best cue of each document, and its score."""
CONTENT_COSINE: Final = "content_cosine"
"""The script field of each vector hit's content cosine (-2 without a content vector): the engine
scores a hit by the best of content and cues, and a cue carried it only where it beat the content."""
CONTENT_COSINE_SCRIPT: Final = (
    "if (doc['vector'].size() == 0) { return -2.0; } return cosineSimilarity(params.query, doc['vector']);"
)
_TIE: Final = 1e-6
"""How much a cue's cosine must beat the content's to have carried a score: less is float32 noise, and a
tie is the content's (as every index breaks it)."""


def vector_body(query: IndexQuery, vector: Vector, ef_search: int | None) -> Json:
    """The vector channel: `knn` queries with the filter inside them (`ef_search` None: engine default).

    Content alone (`IndexQuery.match_cues` false): one `knn` query on `vector`. With cues: the best of
    two, a `dis_max` (tie breaker 0: the higher score, unchanged) of the content's `knn` query and a
    `nested` one on `CUE_VECTORS_FIELD`, which scores a document by its best cue (`score_mode: max`)
    and names that cue in its inner hit. Each takes its own `limit` best, so the union holds the
    `limit` best by max(content, best cue): a document in that top whose best score is its cue's is
    in the cue query's top `limit` (fewer than `limit` documents have a better cue), and likewise
    for the content. The filter is on the document's own fields; the engine applies it to the cues
    of the documents it matches (a parent filter), inside the nested search. The engine reports one
    score for a hit, the higher; its content's own cosine comes as a script field (`CONTENT_COSINE`,
    `limit` dot products), so that `vector_ranked` can tell a cue that beat the content from a tie.
    """
    flt: Json = {"bool": {"filter": filter_clauses(query.tenant_id, query.filter)}}
    content: Json = {"knn": {"vector": _knn(vector, query.limit, flt, ef_search)}}
    body: Json = {"size": query.limit, "track_total_hits": False, "_source": ["memory_id"], "query": content}
    if query.match_cues:
        cues: Json = {
            "nested": {
                "path": CUE_VECTORS_FIELD,
                "score_mode": "max",
                "ignore_unmapped": True,  # an index not yet given the field (`ensure_schema`) has no cues
                "query": {"knn": {f"{CUE_VECTORS_FIELD}.vector": _knn(vector, query.limit, flt, ef_search)}},
                "inner_hits": {
                    "name": CARRIER_HITS,
                    "size": 1,
                    "_source": False,
                    "docvalue_fields": [f"{CUE_VECTORS_FIELD}.cue"],
                },
            }
        }
        body["query"] = {"dis_max": {"tie_breaker": 0.0, "queries": [content, cues]}}
        script = {"lang": "painless", "source": CONTENT_COSINE_SCRIPT, "params": {"query": vector.tolist()}}
        body["script_fields"] = {CONTENT_COSINE: {"script": script}}
    return body


def _knn(vector: Vector, k: int, flt: Json, ef_search: int | None) -> Json:
    """One `knn` clause: the `k` nearest that match `flt` (efficient filtering: inside the search)."""
    knn: Json = {"vector": vector.tolist(), "k": k, "filter": flt}
    if ef_search is not None:
        knn["method_parameters"] = {"ef_search": max(ef_search, k)}
    return knn


def vector_ranked(result: Mapping[str, Any], limit: int) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """(memory_id, cosine) of a `vector_body` answer, best first, and which cue carried each score.

    A hit's score is its content's or its best cue's (the nested query's inner hit), whichever is
    higher; the cue carried it when its cosine beats the content's (`CONTENT_COSINE`) by more than
    float32 noise. Absent from the map: the content carried it (a tie included).
    """
    hits = ranked(result, limit)
    kept = {mid for mid, _ in hits}
    carriers: dict[str, int] = {}
    seen: set[str] = set()
    for hit in hit_list(result):
        mid = as_mapping(hit.get("_source")).get("memory_id")
        score = hit.get("_score")
        if not isinstance(mid, str) or mid in seen or mid not in kept or not isinstance(score, int | float):
            continue
        seen.add(mid)  # the first hit of a memory id is the one `ranked` kept
        inner = next(iter(hit_list(as_mapping(as_mapping(hit.get("inner_hits")).get(CARRIER_HITS)))), None)
        cue = _cue_index(inner) if inner is not None else None
        cue_score = inner.get("_score") if inner is not None else None
        if cue is None or not isinstance(cue_score, int | float):
            continue
        if cue < 0:  # a part of the content carried it (`mapping.part_entries`): the content's, no cue
            continue
        content = _number(as_mapping(hit.get("fields")).get(CONTENT_COSINE))
        if content is None:  # no script field: the cue carried the score if it reached it
            content = cosine(score) - 2 * _TIE
        if cosine(cue_score) > content + _TIE:
            carriers[mid] = cue
    return [(mid, cosine(score)) for mid, score in hits], carriers


def _number(values: object) -> float | None:
    """The first value of a script field (a list of one number), or None."""
    if isinstance(values, list) and values and isinstance(values[0], int | float):
        return float(values[0])
    return None


def _cue_index(inner: Mapping[str, Any]) -> int | None:
    """Which cue an inner hit is: its `cue` field, else its place among the nested objects."""
    value = _number(as_mapping(inner.get("fields")).get(f"{CUE_VECTORS_FIELD}.cue"))
    if value is not None:
        return int(value)
    offset = as_mapping(inner.get("_nested")).get("offset")
    return offset if isinstance(offset, int) else None

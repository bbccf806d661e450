"""Search request bodies (the two channels, their shared filter, the id lookup) and reading the answers.

Both channels carry the same `filter_clauses`; the vector channel carries them *inside* each
`knn` clause (the content's, and the recall cues' nested one), so the engine's efficient filtering
returns `limit` hits whenever that many match and nothing is post-filtered. Response readers
tolerate missing or malformed parts (a part that is not an object reads as empty) and keep the
first hit per memory id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from rearview.backends.opensearch.mapping import (
    CONTEXT_FIELD,
    CUE_VECTORS_FIELD,
    CUES_FIELD,
    INDEX_ANALYZER,
    TERM_FIELDS,
    TERMS_ANALYZER,
    Json,
    epoch_us,
)
from rearview.bm25 import BM25_B, BM25_K1, CorpusStats, CuedDoc, Phrase, bm25_score
from rearview.errors import IndexUnavailableError
from rearview.fts_terms import text_terms
from rearview.ports import CONTEXT_WEIGHT, CUE_WEIGHT
from rearview.text import query_tokens

if TYPE_CHECKING:
    from rearview.models import MemoryFilter
    from rearview.ports import IndexQuery, Vector

__all__ = [
    "KEPT_FIELDS",
    "LOOKUP_FIELDS",
    "MAX_WINDOW",
    "SHORTLIST_SCRIPT",
    "SHORTLIST_TF",
    "TenantCorpus",
    "as_mapping",
    "corpus_body",
    "cosine",
    "filter_clauses",
    "hit_list",
    "keyword_body",
    "keyword_ranked",
    "lookup_body",
    "ranked",
    "tenant_corpus",
    "vector_body",
    "vector_ranked",
    "versions_body",
    "versions_page",
]

MAX_WINDOW: Final = 10_000  # index.max_result_window and the k-NN `k` ceiling
CANDIDATES_PER_HIT: Final = 3
"""The keyword channel asks the engine for this many candidates per hit it returns, then ranks them by
FTS5's BM25: the shortlist's order (`keyword_body`) only has to put the exact top `limit` within its
top `3 * limit`."""
LOOKUP_FIELDS: Final = ["memory_id", "memory_version", "content_hash"]
"""What a write reads of an existing document (plus `KEPT_FIELDS` when it must keep them)."""
KEPT_FIELDS: Final = ["content", CONTEXT_FIELD, "vector", CUES_FIELD, CUE_VECTORS_FIELD]
"""What a vector-less update keeps of the document it replaces (the recall cues unless it brings new ones)."""
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


def corpus_body(tenant_id: str, phrases: Sequence[Phrase]) -> Json:
    """The tenant's keyword statistics, as the embedded index keeps them (a table per tenant).

    A `size: 0` aggregation over every document of the tenant, whatever the query's filter: the
    document count, the total length, each phrase's document count (body, context or cue terms), and
    how many documents predate the term fields (`legacy`, matched from their text). Another tenant's
    documents never move them (issue 24). Size-0 answers are kept in the engine's request cache
    until the next refresh.
    """
    fields = (TERM_FIELDS["body"], TERM_FIELDS["context"], TERM_FIELDS["cues"])
    holds: Json = {
        f"p{i}": {"filter": {"bool": {"should": [_phrase(f, p) for f in fields], "minimum_should_match": 1}}}
        for i, p in enumerate(phrases)
    }
    return {
        "size": 0,
        "track_total_hits": False,
        "query": {"term": {"tenant_id": tenant_id}},
        "aggs": {
            "corpus": {
                "filter": {"term": {"tenant_id": tenant_id}},
                "aggs": {
                    "length": {"sum": {"field": TERM_FIELDS["length"]}},
                    "legacy": {
                        "filter": {"bool": {"must_not": [{"exists": {"field": TERM_FIELDS["length"]}}]}}
                    },
                    **holds,
                },
            }
        },
    }


@dataclass(frozen=True)
class TenantCorpus:
    """A `corpus_body` answer: the tenant's `CorpusStats` and its documents without term fields."""

    stats: CorpusStats
    legacy: int

    def matches(self) -> bool:
        """Whether any document of the tenant can match (a phrase is held, or some are legacy)."""
        return self.legacy > 0 or any(self.stats.hits)


def tenant_corpus(result: Mapping[str, Any], phrases: Sequence[Phrase]) -> TenantCorpus:
    """Read a `corpus_body` answer; raises IndexUnavailableError if the engine reported an error."""
    _raise_error(result)
    corpus = as_mapping(as_mapping(result.get("aggregations")).get("corpus"))
    stats = CorpusStats(
        rows=_int(corpus.get("doc_count")),
        terms=_int(as_mapping(corpus.get("length")).get("value")),
        hits=tuple(_int(as_mapping(corpus.get(f"p{i}")).get("doc_count")) for i in range(len(phrases))),
    )
    return TenantCorpus(stats, _int(as_mapping(corpus.get("legacy")).get("doc_count")))


SHORTLIST_SCRIPT: Final = (
    "if (doc[params.length].size() == 0) { return _score; } "
    "double n = doc[params.length].value; "
    "return _score * params.k1p1 / (1 + params.k1 * (1 - params.b + params.b * n / params.avg));"
)
"""BM25's length normalization with the tenant's average length, applied to the phrase clauses' sum.

It is exact for one occurrence, `(k1 + 1) / (1 + K(length))`, where BM25's term factor is
`f (k1 + 1) / (f + K)`; the clauses carry `f`'s saturation at the average length. A document without
term fields (indexed before them) keeps the engine's own score."""


def keyword_body(query: IndexQuery, text: str, phrases: Sequence[Phrase], corpus: TenantCorpus) -> Json:
    """The BM25 channel's shortlist, ordered by the tenant's own statistics only (`corpus`).

    A document matches when a phrase is in its body, context or cue terms (`TERM_FIELDS`), each phrase
    clauses boosted by its IDF over the tenant (context at `CONTEXT_WEIGHT`, cues at `CUE_WEIGHT`,
    whatever `IndexQuery.match_cues`, as every index scores them), its repetitions by
    what they add (`_phrase_clauses`). The term fields' `boolean` similarity makes a clause score
    its boost, so the engine's corpus-wide statistics (per shard, across tenants) never reach the
    order; a script applies BM25's length normalization with the tenant's average length. That is
    FTS5's BM25 for a document holding each phrase once (near it otherwise); the exact score is
    `keyword_ranked`'s, over the `CANDIDATES_PER_HIT * limit` best, ties by memory id (as
    `bm25_score` breaks them).
    Until `rearview reindex`: a document indexed before the term fields matches through
    `content`/`context`, scored by the engine; in an index created before the term fields were
    `boolean`, a phrase clause scores the engine's BM25 times the tenant's IDF.
    """
    body, ctx, cues = TERM_FIELDS["body"], TERM_FIELDS["context"], TERM_FIELDS["cues"]
    should: list[Json] = [
        clause
        for phrase, idf, held in zip(phrases, corpus.stats.idf(), corpus.stats.hits, strict=True)
        if held
        for field, weight in ((body, idf), (ctx, CONTEXT_WEIGHT * idf), (cues, CUE_WEIGHT * idf))
        for clause in _phrase_clauses(field, phrase, weight)
    ]
    if corpus.legacy:
        legacy: Json = {"query": " ".join(query_tokens(text)), "analyzer": INDEX_ANALYZER}
        should.append(
            {
                "bool": {
                    "must_not": [{"exists": {"field": TERM_FIELDS["length"]}}],
                    "should": [
                        {"match": {"content": legacy}},
                        {"match": {CONTEXT_FIELD: {**legacy, "boost": CONTEXT_WEIGHT}}},
                    ],
                    "minimum_should_match": 1,
                }
            }
        )
    matched: Json = {
        "bool": {
            "should": should,
            "minimum_should_match": 1,
            "filter": filter_clauses(query.tenant_id, query.filter),
        }
    }
    params = {
        "length": TERM_FIELDS["length"],
        "k1": BM25_K1,
        "k1p1": BM25_K1 + 1,
        "b": BM25_B,
        "avg": corpus.stats.avg_len,
    }
    return {
        "size": min(MAX_WINDOW, CANDIDATES_PER_HIT * query.limit),
        "track_total_hits": False,
        "_source": ["memory_id", body, ctx, cues, "content", CONTEXT_FIELD, CUES_FIELD],
        "query": {
            "script_score": {
                "query": matched,
                "script": {"lang": "painless", "source": SHORTLIST_SCRIPT, "params": params},
            }
        },
        "sort": [{"_score": "desc"}, {"memory_id": "asc"}],
    }


def keyword_ranked(
    result: Mapping[str, Any], phrases: Sequence[Phrase], stats: CorpusStats, limit: int
) -> list[tuple[str, float]]:
    """(memory_id, BM25 as FTS5 scores it) of a `keyword_body` answer: its candidates re-ranked, best first.

    `stats` are the tenant's (`tenant_corpus`). A candidate without term fields (indexed before
    them) is tokenized here from its text. Cue terms count at `CUE_WEIGHT` (`bm25_score`).
    """
    _raise_error(result)
    docs: dict[str, CuedDoc] = {}
    for hit in hit_list(result):
        src = as_mapping(hit.get("_source"))
        mid = src.get("memory_id")
        if isinstance(mid, str) and mid not in docs:
            docs[mid] = (
                mid,
                _terms(src, TERM_FIELDS["body"], "content"),
                _terms(src, TERM_FIELDS["context"], CONTEXT_FIELD),
                _terms(src, TERM_FIELDS["cues"], CUES_FIELD),
            )
    return bm25_score(docs.values(), phrases, stats, CONTEXT_WEIGHT, limit, CUE_WEIGHT)


SHORTLIST_TF: Final = 3
"""The shortlist counts a phrase's occurrences in a field up to this many (BM25 saturates: at the average
length a second adds 38 % of the first's weight, a third 20 %, a fourth 12 %)."""
_MAX_SLOP: Final = 1_000_000


def _saturation(freq: int) -> float:
    """BM25's term-frequency factor at the average length, `f (k1 + 1) / (f + k1)` (1 for one occurrence)."""
    return freq * (BM25_K1 + 1) / (freq + BM25_K1)


def _phrase_clauses(field: str, phrase: Phrase, weight: float) -> list[Json]:
    """Clauses scoring `weight * saturation(f)` for a document holding `phrase` f times in `field`.

    Under the `boolean` similarity a clause scores its boost: the phrase once, then each further
    occurrence (up to `SHORTLIST_TF`, a span of that many copies in order) adds what it adds to BM25.
    """
    clauses = [_phrase(field, phrase, weight)]
    for times in range(2, SHORTLIST_TF + 1):
        once: Json = (
            {"span_term": {field: phrase[0]}}
            if len(phrase) == 1
            else {
                "span_near": {
                    "clauses": [{"span_term": {field: term}} for term in phrase],
                    "slop": 0,
                    "in_order": True,
                }
            }
        )
        boost = weight * (_saturation(times) - _saturation(times - 1))
        clauses.append(
            {"span_near": {"clauses": [once] * times, "slop": _MAX_SLOP, "in_order": True, "boost": boost}}
        )
    return clauses


def _phrase(field: str, phrase: Phrase, boost: float | None = None) -> Json:
    clause: Json = {"query": " ".join(phrase), "analyzer": TERMS_ANALYZER}
    if boost is not None:
        clause["boost"] = boost
    return {"match_phrase": {field: clause}}


def _terms(source: Mapping[str, Any], terms_field: str, text_field: str) -> list[str]:
    """A candidate's FTS5 terms of one field: stored, else (indexed before they were) from its text."""
    stored = source.get(terms_field)
    if isinstance(stored, str):
        return stored.split()
    text = source.get(text_field)
    return text_terms(text) if isinstance(text, str) else []


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and math.isfinite(value) else 0


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
    _raise_error(result)
    seen: set[str] = set()
    out: list[tuple[str, float]] = []
    for hit in hit_list(result):
        mid = as_mapping(hit.get("_source")).get("memory_id")
        score = hit.get("_score")
        if isinstance(mid, str) and mid not in seen and isinstance(score, int | float):
            seen.add(mid)
            out.append((mid, float(score)))
    return out[:limit]


def _raise_error(result: Mapping[str, Any]) -> None:
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

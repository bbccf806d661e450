"""The keyword (BM25) channel on OpenSearch: the tenant's statistics, the shortlist, the exact re-rank.

`corpus_bodies` / `tenant_corpus` read the tenant's keyword statistics (never another tenant's);
`keyword_body` asks the engine for a shortlist ordered by them, with the shared filter
(`queries.filter_clauses`); `keyword_ranked` re-ranks it by FTS5's BM25 (`bm25_score`), so the
order is the embedded index's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from rearview.backends.opensearch.mapping import (
    CONTEXT_FIELD,
    CUES_FIELD,
    INDEX_ANALYZER,
    TERM_FIELDS,
    TERMS_ANALYZER,
    Json,
)
from rearview.backends.opensearch.queries import (
    MAX_WINDOW,
    as_mapping,
    filter_clauses,
    hit_list,
    raise_on_error,
)
from rearview.ports import CONTEXT_WEIGHT, CUE_WEIGHT
from rearview.text import query_tokens
from rearview.text.bm25 import BM25_B, BM25_K1, CorpusStats, CuedDoc, Phrase, bm25_score
from rearview.text.fts_terms import text_terms

if TYPE_CHECKING:
    from rearview.ports import IndexQuery

__all__ = [
    "SHORTLIST_SCRIPT",
    "SHORTLIST_TF",
    "TenantCorpus",
    "corpus_bodies",
    "keyword_body",
    "keyword_ranked",
    "tenant_corpus",
]


CANDIDATES_PER_HIT: Final = 3
"""The keyword channel asks the engine for this many candidates per hit it returns, then ranks them by
FTS5's BM25: the shortlist's order (`keyword_body`) only has to put the exact top `limit` within its
top `3 * limit`."""


def corpus_bodies(tenant_id: str, phrases: Sequence[Phrase]) -> list[Json]:
    """The tenant's keyword statistics as the embedded index keeps them (a table per tenant): one `_msearch`.

    Whatever the query's filter, over every document of the tenant: its document count and total
    length (a `sum` of `TERM_FIELDS["length"]`), how many documents predate the term fields
    (`legacy`, matched from their text), and each phrase's document count (body, context or cue
    terms). Each count is a `size: 0` search counting its own matches (`track_total_hits`), which
    the engine finds by walking the phrase's postings beside the tenant's: its cost follows the
    phrase's documents in the tenant, never the tenant's size, and the searches run side by side
    (issue 49: an aggregation testing every phrase on each of the tenant's documents grew with the
    tenant; docs/scale.md). Another tenant's documents never move them (issue 24). Size-0 answers are
    kept in the engine's request cache until the next refresh; the first is the same for every query.
    """
    tenant: Json = {"term": {"tenant_id": tenant_id}}
    fields = (TERM_FIELDS["body"], TERM_FIELDS["context"], TERM_FIELDS["cues"])
    length: Json = {"size": 0, "track_total_hits": True, "query": tenant}
    length["aggs"] = {"length": {"sum": {"field": TERM_FIELDS["length"]}}}
    legacy = _count([tenant], must_not=[{"exists": {"field": TERM_FIELDS["length"]}}])
    held = [
        _count([tenant, {"bool": {"should": [_phrase(f, p) for f in fields], "minimum_should_match": 1}}])
        for p in phrases
    ]
    return [length, legacy, *held]


def _count(filters: list[Json], must_not: list[Json] | None = None) -> Json:
    """A search that only counts the documents matching every filter (and none of `must_not`)."""
    query: Json = {"bool": {"filter": filters, **({"must_not": must_not} if must_not else {})}}
    return {"size": 0, "track_total_hits": True, "query": query}


@dataclass(frozen=True)
class TenantCorpus:
    """A `corpus_bodies` answer: the tenant's `CorpusStats` and its documents without term fields."""

    stats: CorpusStats
    legacy: int

    def matches(self) -> bool:
        """Whether any document of the tenant can match (a phrase is held, or some are legacy)."""
        return self.legacy > 0 or any(self.stats.hits)


def tenant_corpus(results: Sequence[Mapping[str, Any]], phrases: Sequence[Phrase]) -> TenantCorpus:
    """Read the answers to `corpus_bodies`; raises IndexUnavailableError if the engine reported an error."""
    for result in results:
        raise_on_error(result)
    length, legacy, *held = results
    stats = CorpusStats(
        rows=_total(length),
        terms=_int(as_mapping(as_mapping(length.get("aggregations")).get("length")).get("value")),
        hits=tuple(_total(held[i]) if i < len(held) else 0 for i in range(len(phrases))),
    )
    return TenantCorpus(stats, _total(legacy))


def _total(result: Mapping[str, Any]) -> int:
    """The exact match count of a `track_total_hits` search."""
    return _int(as_mapping(as_mapping(result.get("hits")).get("total")).get("value"))


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
    raise_on_error(result)
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

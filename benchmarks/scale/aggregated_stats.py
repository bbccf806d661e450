"""The tenant keyword statistics as one aggregation (the adapter's request before issue 49), for comparison.

Before issue 49 the adapter read a tenant's statistics with one `size: 0` search whose `filter`
aggregation tested every query phrase on each of the tenant's documents: its cost grew with the
tenant. `OpenSearchMemoryIndex.search` now sends `keyword_queries.corpus_bodies` (a count per
phrase, side by side). `scale_search.py` times both on the same index, interleaved, and
`fairness/opensearch_keyword.py` rebuilds its older single request from `aggregation`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rearview.backends.opensearch.mapping import TERM_FIELDS, TERMS_ANALYZER, Json
from rearview.backends.opensearch.queries import as_mapping
from rearview.text.bm25 import CorpusStats, Phrase


def aggregation(tenant_id: str, phrases: Sequence[Phrase]) -> Json:
    """The `corpus` filter aggregation: document count, total length, legacy count and each phrase's count."""
    fields = (TERM_FIELDS["body"], TERM_FIELDS["context"], TERM_FIELDS["cues"])
    holds: Json = {
        f"p{i}": {"filter": {"bool": {"should": [_phrase(f, p) for f in fields], "minimum_should_match": 1}}}
        for i, p in enumerate(phrases)
    }
    return {
        "filter": {"term": {"tenant_id": tenant_id}},
        "aggs": {
            "length": {"sum": {"field": TERM_FIELDS["length"]}},
            "legacy": {"filter": {"bool": {"must_not": [{"exists": {"field": TERM_FIELDS["length"]}}]}}},
            **holds,
        },
    }


def _phrase(field: str, phrase: Phrase) -> Json:
    return {"match_phrase": {field: {"query": " ".join(phrase), "analyzer": TERMS_ANALYZER}}}


def aggregated_body(tenant_id: str, phrases: Sequence[Phrase]) -> Json:
    """The whole request the adapter sent before issue 49."""
    return {
        "size": 0,
        "track_total_hits": False,
        "query": {"term": {"tenant_id": tenant_id}},
        "aggs": {"corpus": aggregation(tenant_id, phrases)},
    }


def aggregated_stats(corpus: Mapping[str, Any], phrases: Sequence[Phrase]) -> CorpusStats:
    """`CorpusStats` from an answer's `corpus` aggregation."""
    return CorpusStats(
        rows=int(corpus.get("doc_count", 0)),
        terms=int(as_mapping(corpus.get("length")).get("value") or 0),
        hits=tuple(int(as_mapping(corpus.get(f"p{i}")).get("doc_count", 0)) for i in range(len(phrases))),
    )

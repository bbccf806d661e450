"""The OpenSearch keyword channel's tenant statistics are counts, not a per-document aggregation (issue 49).

An aggregation that tests each phrase on every document of the tenant grows with the tenant (a 100k
tenant's searches paid it on every query); a `track_total_hits` count per phrase walks the phrase's
postings beside the tenant's. The real engine's answers are checked by the contract suites
(tests/contract/test_index_contract.py); here, the request's shape and the reading of its answers.
"""

from __future__ import annotations

from typing import Any

import pytest

from rearview.backends.opensearch.keyword_queries import corpus_bodies, tenant_corpus
from rearview.errors import IndexUnavailableError
from rearview.text.bm25 import CorpusStats

PHRASES = [("deploy",), ("billing", "api")]


def _walk(node: Any) -> list[dict[str, Any]]:
    """Every mapping in a request body."""
    if isinstance(node, dict):
        return [node, *(m for v in node.values() for m in _walk(v))]
    if isinstance(node, list):
        return [m for v in node for m in _walk(v)]
    return []


def test_no_statistic_tests_a_phrase_on_each_document_of_the_tenant() -> None:
    bodies = corpus_bodies("t1", PHRASES)
    for body in bodies:
        assert body["size"] == 0 and body["track_total_hits"] is True
        for agg in _walk(body.get("aggs", {})):
            assert "filter" not in agg and "filters" not in agg, "a filter aggregation visits every document"
    assert len(bodies) == 2 + len(PHRASES)


def test_every_count_is_the_tenants_own() -> None:
    for body in corpus_bodies("t1", PHRASES):
        terms = [m["term"] for m in _walk(body["query"]) if "term" in m]
        assert {"tenant_id": "t1"} in terms


def _total(n: int, **extra: Any) -> dict[str, Any]:
    return {"hits": {"total": {"value": n, "relation": "eq"}, "hits": []}, **extra}


def test_the_answers_read_as_the_tenants_statistics() -> None:
    answers = [_total(40, aggregations={"length": {"value": 812.0}}), _total(2), _total(7), _total(0)]
    corpus = tenant_corpus(answers, PHRASES)
    assert corpus.stats == CorpusStats(rows=40, terms=812, hits=(7, 0))
    assert corpus.legacy == 2
    assert corpus.matches()


def test_an_engine_error_in_any_count_is_raised() -> None:
    answers = [_total(1, aggregations={"length": {"value": 3}}), _total(0), {"error": {"type": "boom"}}]
    with pytest.raises(IndexUnavailableError):
        tenant_corpus(answers, PHRASES[:1])

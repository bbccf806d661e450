"""`OpenSearchMemoryIndex` against a real OpenSearch 2.19 node (k-NN, lucene engine).

The node is shared by the session (`opensearch_url`, from `tests/fixtures/opensearch.py`, which the
root conftest registers); every test works under its own alias.
The signing tests need no engine: they sign prepared requests with fake credentials, or talk to
a loopback HTTP server that records what the client sends.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from uuid import uuid4

import numpy as np
import pytest
import requests
from botocore.credentials import Credentials
from opensearchpy import OpenSearch
from opensearchpy.exceptions import RequestError

from rearview.backends.opensearch import (
    INDEX_ANALYZER,
    QUERY_ANALYZER,
    OpenSearchConfig,
    OpenSearchMemoryIndex,
    build_client,
    index_body,
    signing_auth,
)
from rearview.backends.opensearch.mapping import TERM_FIELDS, added_fields, document_source
from rearview.errors import IndexUnavailableError, InvalidInputError
from rearview.models import Memory, MemoryFilter, MemoryStatus, MemoryType, Visibility
from rearview.ports import CONTEXT_WEIGHT, IndexDocument, IndexQuery
from rearview.text import tokens
from rearview.text.bm25 import bm25_rank_fields
from rearview.text.fts_terms import fts_terms, text_terms
from tests.engines.opensearch_node import OpenSearchNode
from tests.factories import T0, make_memory

DIM = 32
needs_engine = pytest.mark.opensearch
IndexFactory = Callable[..., OpenSearchMemoryIndex]


# -- helpers ------------------------------------------------------------------------------------


def memory(memory_id: str, content: str = "a note", **fields: Any) -> Memory:
    return make_memory(content, memory_id=memory_id, **fields)


def unit(rng: np.random.Generator, n: int | None = None) -> np.ndarray:
    raw = rng.standard_normal((n or 1, DIM)).astype(np.float32)
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    return raw if n is not None else raw[0]


def exact_top(query: np.ndarray, docs: list[IndexDocument], k: int) -> list[tuple[str, float]]:
    sims = [(d.memory.id, float(np.dot(d.vector, query))) for d in docs if d.vector is not None]
    return sorted(sims, key=lambda p: -p[1])[:k]


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [mid for mid, _ in hits]


def make_config(url: str, **overrides: Any) -> OpenSearchConfig:
    values: dict[str, Any] = {
        "endpoint": url,
        "dimension": DIM,
        "mode": "local",
        "engine": "lucene",
        "shards": 1,
        "replicas": 0,
        "refresh": "true",  # visible on return without waiting for the next scheduled refresh
        "alias": f"rv-test-{uuid4().hex[:12]}",
        "timeout_s": 5.0,
    }
    values.update(overrides)
    return OpenSearchConfig(**values)


@pytest.fixture
def make_index(opensearch_url: str) -> Iterator[IndexFactory]:
    """Build adapters on the shared node; every index they create is deleted after the test."""
    aliases: list[str] = []

    def factory(**overrides: Any) -> OpenSearchMemoryIndex:
        index = OpenSearchMemoryIndex(make_config(opensearch_url, **overrides))
        aliases.append(index.config.alias)
        index.ensure_schema()
        return index

    yield factory
    raw = OpenSearch(hosts=[opensearch_url], timeout=30)
    for alias in set(aliases):
        raw.indices.delete(index=f"{alias}-v*", ignore=[404])


# -- schema -------------------------------------------------------------------------------------


@needs_engine
def test_ensure_schema_creates_an_explicit_versioned_mapping_behind_the_alias(
    make_index: IndexFactory,
) -> None:
    index = make_index(index_version=3)
    index.ensure_schema()  # idempotent
    alias = index.config.alias
    assert index.current_version() == 3
    assert list(index.client.indices.get_alias(name=alias)) == [f"{alias}-v3"]

    mapping = index.client.indices.get_mapping(index=alias)[f"{alias}-v3"]["mappings"]
    assert mapping["dynamic"] == "strict"
    props = mapping["properties"]
    for name in (
        "memory_id",
        "tenant_id",
        "agent_id",
        "visibility",
        "session_id",
        "type",
        "tags",
        "status",
        "scope_key",
    ):
        assert props[name] == {"type": "keyword"}, name
    assert props["event_time"]["type"] == "date"
    assert props["updated_at"]["type"] == "date"
    assert props["event_time_us"]["type"] == "long"
    assert props["content"] == {"type": "text", "analyzer": INDEX_ANALYZER, "search_analyzer": QUERY_ANALYZER}
    vector = props["vector"]
    assert vector["type"] == "knn_vector"
    assert vector["dimension"] == DIM
    assert vector["method"]["name"] == "hnsw"
    assert vector["method"]["engine"] == "lucene"
    assert vector["method"]["space_type"] == "cosinesimil"

    with pytest.raises(RequestError, match="strict_dynamic_mapping_exception"):
        index.client.index(index=alias, body={"memory_id": "x", "free_form_payload": {"a": 1}})

    text = "我喜欢吃苹果 The Foxes were happily running to the Café; deployed, generalizations"
    analyzed = index.client.indices.analyze(index=alias, body={"analyzer": INDEX_ANALYZER, "text": text})
    terms = [t["token"] for t in analyzed["tokens"]]
    assert terms[:7] == ["我喜", "喜欢", "欢吃", "吃苹", "苹果", "the", "fox"]
    assert terms == fts_terms(tokens(text))  # the terms SQLite's FTS5 index holds: the same matches


def test_constructor_does_no_io_and_config_is_validated() -> None:
    # Nothing listens on port 9: a constructor that connected would fail here.
    OpenSearchMemoryIndex(OpenSearchConfig(endpoint="http://127.0.0.1:9", dimension=8, mode="local"))
    OpenSearchMemoryIndex(OpenSearchConfig(endpoint="https://h.example", dimension=8, region="us-east-1"))
    with pytest.raises(InvalidInputError, match="mode"):
        OpenSearchConfig(endpoint="https://h.example", dimension=8, mode="cloud")
    with pytest.raises(InvalidInputError, match="engine") as err:
        OpenSearchConfig(endpoint="https://h.example", dimension=8, region="r", engine="nmslib")
    assert err.value.allowed == ["faiss", "lucene"]
    with pytest.raises(InvalidInputError, match="endpoint"):
        OpenSearchConfig(endpoint="ftp://h.example", dimension=8, mode="local")
    bare = OpenSearchConfig(endpoint="search-x.eu-west-1.es.amazonaws.com", dimension=8)
    assert bare.endpoint == "https://search-x.eu-west-1.es.amazonaws.com"


# -- search -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_index(
    opensearch_url: str,
) -> Iterator[tuple[OpenSearchMemoryIndex, list[IndexDocument], list[IndexDocument]]]:
    """3000 memories of tenant `big` (30 of them in session `rare`) and 5 of tenant `small`."""
    rng = np.random.default_rng(7)
    index = OpenSearchMemoryIndex(make_config(opensearch_url))
    vectors = unit(rng, 3005)
    big = [
        IndexDocument(
            memory(
                f"b{i:04d}",
                f"big tenant note {i}",
                tenant_id="big",
                session_id="rare" if i % 100 == 0 else "s",
            ),
            vectors[i],
        )
        for i in range(3000)
    ]
    small = [
        IndexDocument(memory(f"s{i}", f"small tenant note {i}", tenant_id="small"), vectors[3000 + i])
        for i in range(5)
    ]
    # The reindex path: fill a version without waiting on refreshes, then make it live.
    index.create_version(1)
    index.upsert_into(1, big + small)
    index.switch_alias(1)
    yield index, big, small
    index.client.indices.delete(index=f"{index.config.alias}-v*", ignore=[404])


@needs_engine
def test_filtered_knn_for_a_small_tenant_in_a_large_index_returns_top_k(big_index: Any) -> None:
    index, big, small = big_index
    assert (index.count("big"), index.count("small")) == (3000, 5)
    query = unit(np.random.default_rng(11))

    # What a post-filter would get: the global top 5 holds (almost surely) no `small` memory.
    raw = index.client.search(
        index=index.config.alias,
        body={
            "size": 5,
            "_source": ["tenant_id"],
            "query": {"knn": {"vector": {"vector": query.tolist(), "k": 5}}},
        },
    )
    assert sum(h["_source"]["tenant_id"] == "small" for h in raw["hits"]["hits"]) < 5

    hits = index.search(IndexQuery("small", MemoryFilter(), 5, text="note", vector=query))
    assert ids(hits.vector) == ids(exact_top(query, small, 5))
    assert [s for _, s in hits.vector] == pytest.approx([s for _, s in exact_top(query, small, 5)], abs=1e-4)
    assert sorted(ids(hits.keyword)) == sorted(d.memory.id for d in small)

    rare = [d for d in big if d.memory.session_id == "rare"]
    hits = index.search(IndexQuery("big", MemoryFilter(session_id="rare"), 10, vector=query))
    assert ids(hits.vector) == ids(exact_top(query, rare, 10))
    assert hits.keyword == []


def random_dataset(rng: random.Random, nrng: np.random.Generator, n: int) -> list[IndexDocument]:
    tags_pool = ["red", "green", "blue", "work"]
    vectors = unit(nrng, n)
    docs = []
    for i in range(n):
        m = memory(
            f"m{i:03d}",
            f"memory number {i} {rng.choice(['alpha', 'beta', 'gamma'])}",
            agent_id=rng.choice(["a1", "a2", "a3"]),
            visibility=rng.choice(list(Visibility)),
            session_id=rng.choice([None, "s1", "s2"]),
            type=rng.choice(list(MemoryType)),
            tags=rng.sample(tags_pool, rng.randint(0, 3)),
            # microsecond spacing: the inclusive bounds are checked at full precision
            event_time=T0 + timedelta(seconds=rng.randrange(0, 5), microseconds=rng.randrange(0, 3) * 400),
            status=rng.choice(list(MemoryStatus)),
            scope_key=rng.choice(["k1", "k2"]),
        )
        docs.append(IndexDocument(m, vectors[i]))
    return docs


def random_filter(rng: random.Random, docs: list[IndexDocument]) -> MemoryFilter:
    times = [d.memory.event_time for d in docs]
    nudge = timedelta(microseconds=rng.choice([0, 0, 1, -1]))
    lo, hi = sorted(rng.sample(times, 2))
    return MemoryFilter(
        agent_id=rng.choice([None, "a1", "a2", "nobody"]),
        session_id=rng.choice([None, None, "s1", "s2"]),
        types=rng.choice([None, None, (), tuple(rng.sample(list(MemoryType), rng.randint(1, 3)))]),
        tags=rng.choice([None, (), tuple(rng.sample(["red", "green", "blue", "work"], rng.randint(1, 2)))]),
        time_from=rng.choice([None, lo + nudge]),
        time_to=rng.choice([None, hi - nudge]),
        statuses=tuple(rng.sample(list(MemoryStatus), rng.randint(1, 4))),
        scope_key=rng.choice([None, None, "k1"]),
    )


@needs_engine
def test_filters_reproduce_memory_filter_matches(make_index: IndexFactory) -> None:
    rng, nrng = random.Random(3), np.random.default_rng(3)
    index = make_index()
    docs = random_dataset(rng, nrng, 240)
    decoys = [
        IndexDocument(memory(f"m{i:03d}", "memory decoy", tenant_id="t2"), unit(nrng)) for i in range(40)
    ]
    index.upsert(docs + decoys)
    query = unit(nrng)
    checked = nonempty = 0
    for _ in range(60):
        flt = random_filter(rng, docs)
        expected = [d for d in docs if flt.matches(d.memory)]
        hits = index.search(IndexQuery("t1", flt, len(docs), text="memory", vector=query))
        assert sorted(ids(hits.keyword)) == sorted(d.memory.id for d in expected), flt
        assert ids(hits.vector) == ids(exact_top(query, expected, len(docs))), flt
        checked += 1
        nonempty += bool(expected)
    assert checked == 60 and nonempty >= 20  # the sample exercises matches and non-matches


@needs_engine
def test_vector_scores_are_cosine_similarity_and_keyword_scores_bm25(make_index: IndexFactory) -> None:
    index = make_index()
    e0, e1 = np.eye(DIM, dtype=np.float32)[:2]
    diagonal = (e0 + e1) / np.float32(np.sqrt(2))
    index.upsert(
        [
            IndexDocument(memory("same", "我喜欢吃苹果"), e0),
            IndexDocument(memory("diag", "the quick brown fox"), diagonal),
            IndexDocument(memory("orth", "the apple is red"), e1),
            IndexDocument(memory("opposite", "苹果, 苹果!"), -e0),
        ]
    )
    hits = index.search(IndexQuery("t1", MemoryFilter(), 10, vector=e0))
    assert ids(hits.vector) == ["same", "diag", "orth", "opposite"]
    assert [s for _, s in hits.vector] == pytest.approx([1.0, 0.70710677, 0.0, -1.0], abs=1e-5)

    assert ids(index.search(IndexQuery("t1", MemoryFilter(), 10, text="苹果")).keyword) == [
        "opposite",
        "same",
    ]
    # English stopwords are dropped from queries (as in the embedded index) ...
    assert ids(index.search(IndexQuery("t1", MemoryFilter(), 10, text="the fox")).keyword) == ["diag"]
    # ... unless the query is nothing but stopwords.
    the = index.search(IndexQuery("t1", MemoryFilter(), 10, text="the")).keyword
    assert sorted(ids(the)) == ["diag", "orth"]
    assert all(score > 0 for _, score in the)
    assert index.search(IndexQuery("t1", MemoryFilter(), 10)).keyword == []


@needs_engine
def test_upsert_replaces_and_vectorless_update_keeps_vector_and_text(make_index: IndexFactory) -> None:
    index = make_index()
    rng = np.random.default_rng(5)
    v1, v2 = unit(rng), unit(rng)
    index.upsert([IndexDocument(memory("m1", "first words"), v1)])
    index.upsert([IndexDocument(memory("m1", "second words"), v2)])
    assert index.count("t1") == 1
    assert ids(index.search(IndexQuery("t1", MemoryFilter(), 5, text="first")).keyword) == []
    assert index.search(IndexQuery("t1", MemoryFilter(), 5, vector=v2)).vector[0][1] == pytest.approx(
        1.0, abs=1e-5
    )

    retired = memory("m1", "second words", status=MemoryStatus.SUPERSEDED, tags=["old"], version=2)
    index.upsert([IndexDocument(retired, None), IndexDocument(memory("absent"), None)])
    assert index.count("t1") == 1  # the absent one was not created
    assert index.search(IndexQuery("t1", MemoryFilter(), 5, text="second", vector=v2)).vector == []
    old = MemoryFilter(statuses=(MemoryStatus.SUPERSEDED,), tags=("old",))
    hits = index.search(IndexQuery("t1", old, 5, text="second", vector=v2))
    assert hits.vector == [("m1", pytest.approx(1.0, abs=1e-5))]
    assert ids(hits.keyword) == ["m1"]  # the text was kept with the vector


@needs_engine
def test_a_zero_vector_is_kept_out_of_the_vector_channel(make_index: IndexFactory) -> None:
    index = make_index()
    zero, ones = np.zeros(DIM, dtype=np.float32), np.ones(DIM, dtype=np.float32)
    index.upsert([IndexDocument(memory("z", "punctuation only"), zero), IndexDocument(memory("o"), ones)])
    hits = index.search(IndexQuery("t1", MemoryFilter(), 5, text="punctuation", vector=ones))
    assert ids(hits.keyword) == ["z"]
    assert ids(hits.vector) == ["o"]
    assert index.search(IndexQuery("t1", MemoryFilter(), 5, vector=zero)).vector == []


@needs_engine
def test_delete_and_count_are_per_tenant(make_index: IndexFactory) -> None:
    index = make_index()
    rng = np.random.default_rng(9)
    index.upsert(
        [IndexDocument(memory(f"m{i}", tenant_id=t), unit(rng)) for t in ("t1", "t2") for i in range(4)]
    )
    assert (index.count("t1"), index.count("t2"), index.count("t3")) == (4, 4, 0)
    index.delete("t1", ["m0", "m1", "never-written"])
    index.delete("t1", [])
    assert (index.count("t1"), index.count("t2")) == (2, 4)
    left = index.search(IndexQuery("t1", MemoryFilter(), 10, text="note", vector=unit(rng)))
    assert sorted(ids(left.vector)) == sorted(ids(left.keyword)) == ["m2", "m3"]


@needs_engine
def test_wrong_dimension_is_invalid_input_and_writes_nothing(make_index: IndexFactory) -> None:
    index = make_index()
    good, bad = np.ones(DIM, dtype=np.float32), np.ones(DIM - 1, dtype=np.float32)
    with pytest.raises(InvalidInputError) as err:
        index.upsert([IndexDocument(memory("ok"), good), IndexDocument(memory("bad"), bad)])
    assert err.value.field == "vector"
    assert index.count("t1") == 0
    with pytest.raises(InvalidInputError):
        index.search(IndexQuery("t1", MemoryFilter(), 5, vector=bad))


# -- lifecycle ----------------------------------------------------------------------------------


@needs_engine
def test_reindex_into_a_new_version_then_switch_alias_gives_the_same_results(
    make_index: IndexFactory,
) -> None:
    rng, nrng = random.Random(21), np.random.default_rng(21)
    index = make_index()
    docs = random_dataset(rng, nrng, 60)
    index.upsert(docs)
    query, flt = unit(nrng), MemoryFilter(statuses=tuple(MemoryStatus))
    before = index.search(IndexQuery("t1", flt, 10, text="memory alpha", vector=query))
    assert len(before.vector) == len(before.keyword) == 10

    assert index.create_version(2) == f"{index.config.alias}-v2"
    assert index.create_version(2) == f"{index.config.alias}-v2"  # idempotent
    index.upsert_into(2, docs)
    assert index.current_version() == 1
    index.switch_alias(2)
    assert index.current_version() == 2
    assert list(index.client.indices.get_alias(name=index.config.alias)) == [f"{index.config.alias}-v2"]

    after = index.search(IndexQuery("t1", flt, 10, text="memory alpha", vector=query))
    assert ids(after.vector) == ids(before.vector)
    assert ids(after.keyword) == ids(before.keyword)
    assert [s for _, s in after.vector] == pytest.approx([s for _, s in before.vector], abs=1e-5)
    assert index.count("t1") == 60

    with pytest.raises(InvalidInputError):
        index.drop_version(2)  # live
    index.drop_version(1)
    assert not index.client.indices.exists(index=f"{index.config.alias}-v1")
    with pytest.raises(InvalidInputError):
        index.switch_alias(7)


# -- degradation --------------------------------------------------------------------------------


@needs_engine
def test_engine_killed_mid_test_raises_index_unavailable_within_the_timeout(
    disposable_opensearch_node: OpenSearchNode,
) -> None:
    config = make_config(disposable_opensearch_node.url, timeout_s=5.0)
    index = OpenSearchMemoryIndex(config)
    index.ensure_schema()
    vector = np.ones(DIM, dtype=np.float32)
    index.upsert([IndexDocument(memory("m1"), vector)])
    assert ids(index.search(IndexQuery("t1", MemoryFilter(), 5, text="note", vector=vector)).vector) == ["m1"]

    disposable_opensearch_node.kill()
    for call in (
        lambda: index.search(IndexQuery("t1", MemoryFilter(), 5, text="note", vector=vector)),
        lambda: index.count("t1"),
        lambda: index.upsert([IndexDocument(memory("m2"), vector)]),
        lambda: index.delete("t1", ["m1"]),
        index.ensure_schema,
    ):
        began = time.monotonic()
        with pytest.raises(IndexUnavailableError) as err:
            call()
        assert time.monotonic() - began < config.timeout_s
        assert err.value.__cause__ is not None


def test_a_silent_engine_times_out_within_the_bound() -> None:
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        config = OpenSearchConfig(
            endpoint=f"http://127.0.0.1:{port}", dimension=DIM, mode="local", timeout_s=0.5
        )
        index = OpenSearchMemoryIndex(config)
        began = time.monotonic()
        with pytest.raises(IndexUnavailableError, match="search"):
            index.search(IndexQuery("t1", MemoryFilter(), 5, text="anything"))
        assert time.monotonic() - began < config.timeout_s + 5  # bounded, with slack for a loaded host


# -- serverless-style identity (engine-assigned ids, memory id as a field) ----------------------


@needs_engine
def test_assigned_ids_update_and_delete_by_memory_id_field(make_index: IndexFactory) -> None:
    index = make_index(assigned_ids=True)
    rng = np.random.default_rng(13)
    v1, v2 = unit(rng), unit(rng)
    index.upsert(
        [
            IndexDocument(memory("m1", "first words"), v1),
            IndexDocument(memory("m2"), v1),
            IndexDocument(memory("m1", tenant_id="t2"), v1),
        ]
    )
    index.upsert([IndexDocument(memory("m1", "second words"), v2)])
    assert (index.count("t1"), index.count("t2")) == (2, 1)
    raw = index.client.search(index=index.config.alias, body={"query": {"term": {"memory_id": "m1"}}})
    assert all(":" not in h["_id"] for h in raw["hits"]["hits"])  # the engine chose the ids

    hits = index.search(IndexQuery("t1", MemoryFilter(), 5, text="words", vector=v2))
    assert hits.vector[0] == ("m1", pytest.approx(1.0, abs=1e-5))
    assert ids(hits.keyword) == ["m1"]

    index.upsert(
        [
            IndexDocument(memory("m1", "second words", status=MemoryStatus.ARCHIVED, version=2), None),
            IndexDocument(memory("absent"), None),
        ]
    )
    assert index.count("t1") == 2
    archived = IndexQuery("t1", MemoryFilter(statuses=(MemoryStatus.ARCHIVED,)), 5, text="second", vector=v2)
    hits = index.search(archived)
    assert hits.vector == [("m1", pytest.approx(1.0, abs=1e-5))]
    assert ids(hits.keyword) == ["m1"]

    index.delete("t1", ["m1", "never-written"])
    assert (index.count("t1"), index.count("t2")) == (1, 1)
    assert index.search(archived).vector == []


@needs_engine
def test_assigned_ids_tolerate_a_stale_copy_left_by_read_after_write_lag(make_index: IndexFactory) -> None:
    index = make_index(assigned_ids=True)
    vector = np.ones(DIM, dtype=np.float32)
    index.upsert([IndexDocument(memory("m1"), vector)])
    # A second write that did not see the first (lag) leaves two copies of m1.
    index.client.index(
        index=index.config.alias,
        refresh="true",
        body={
            "memory_id": "m1",
            "tenant_id": "t1",
            "agent_id": "default",
            "visibility": "shared",
            "type": "semantic",
            "tags": [],
            "status": "active",
            "scope_key": "semantic/shared/*/*",
            "content": "a note",
            "vector": vector.tolist(),
            "event_time": T0.isoformat(),
            "event_time_us": 0,
            "updated_at": T0.isoformat(),
        },
    )
    hits = index.search(IndexQuery("t1", MemoryFilter(), 5, text="note", vector=vector))
    assert ids(hits.vector) == ids(hits.keyword) == ["m1"]
    index.upsert([IndexDocument(memory("m1", "fresh"), vector)])  # the next write removes every copy
    assert index.count("t1") == 1


# -- signing ------------------------------------------------------------------------------------

FAKE_CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")


@pytest.mark.parametrize(("mode", "service"), [("managed", "es"), ("serverless", "aoss")])
def test_sigv4_signs_for_the_service_of_the_mode(mode: str, service: str) -> None:
    config = OpenSearchConfig(
        endpoint="https://abc.us-west-2.example.com",
        dimension=8,
        mode=mode,
        region="us-west-2",
    )
    auth = signing_auth(config, FAKE_CREDENTIALS)
    assert auth is not None
    request = requests.Request(
        "POST",
        f"{config.endpoint}/rearview/_msearch",
        data=b"{}\n{}\n",
        headers={"Content-Type": "application/x-ndjson"},
    ).prepare()
    signed = auth(request)
    header = signed.headers["Authorization"]
    assert header.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert f"/us-west-2/{service}/aws4_request" in header
    assert "x-amz-content-sha256" in header  # aoss requires the signed payload hash
    assert signed.headers["X-Amz-Security-Token"] == "session-token"
    assert signing_auth(OpenSearchConfig(endpoint="http://127.0.0.1:9200", dimension=8, mode="local")) is None


class _Recorder(BaseHTTPRequestHandler):
    """A loopback stand-in for OpenSearch that records requests and answers with empty results."""

    seen: ClassVar[list[tuple[str, str, dict[str, str], bytes]]] = []

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, self.path, dict(self.headers), body))
        if "_bulk" in self.path:
            payload: dict[str, Any] = {"took": 1, "errors": False, "items": []}
        elif "_msearch" in self.path:
            payload = {"responses": [{"hits": {"hits": []}}] * body.count(b'{"index"')}
        else:
            payload = {"hits": {"total": {"value": 0}, "hits": []}}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[str, str, dict[str, str], bytes]]]]:
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.seen
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("mode", "service"), [("managed", "es"), ("serverless", "aoss")])
def test_the_client_sends_signed_requests_and_serverless_sends_no_ids_or_refresh(
    recorder: Any, mode: str, service: str
) -> None:
    url, seen = recorder
    config = OpenSearchConfig(
        endpoint=url,
        dimension=DIM,
        mode=mode,
        region="eu-west-1",
        refresh="wait_for",
        alias="mem",
    )
    index = OpenSearchMemoryIndex(config, client=build_client(config, FAKE_CREDENTIALS))
    index.upsert([IndexDocument(memory("m1"), np.ones(DIM, dtype=np.float32))])
    index.search(IndexQuery("t1", MemoryFilter(), 5, text="x", vector=np.ones(DIM, dtype=np.float32)))
    assert seen
    for _, _, headers, _ in seen:
        assert f"/eu-west-1/{service}/aws4_request" in headers["Authorization"]
    bulk = [(path, body) for _, path, _, body in seen if "_bulk" in path]
    assert len(bulk) == 1
    path, body = bulk[0]
    actions = [json.loads(line) for line in body.decode().splitlines() if line.startswith('{"index"')]
    if mode == "serverless":
        assert "refresh" not in path
        assert actions == [{"index": {"_index": "mem"}}]
        assert any("_search" in p for _, p, _, _ in seen)  # looked up the existing copies first
    else:
        assert "refresh=wait_for" in path
        versioned = {"version": 1, "version_type": "external_gte"}  # the engine refuses stale writes
        assert actions == [{"index": {"_index": "mem", "_id": "t1:m1", **versioned}}]


@needs_engine
def test_ensure_schema_adds_the_fields_added_since_to_an_index_created_before_them(
    make_index: IndexFactory,
) -> None:
    index = make_index(index_version=2)
    alias = index.config.alias
    index.client.indices.delete(index=f"{alias}-v2")
    body = index_body(index.config)
    added = added_fields(index.config)
    for name in added:
        del body["mappings"]["properties"][name]
    index.client.indices.create(index=f"{alias}-v2", body=body)
    index.client.indices.put_alias(index=f"{alias}-v2", name=alias)

    index.ensure_schema()
    props = index.client.indices.get_mapping(index=alias)[f"{alias}-v2"]["mappings"]["properties"]
    assert {name: props[name] for name in added} == added
    doc = IndexDocument(
        memory("m1", version=4), unit(np.random.default_rng(1)), context="[8 May 2023] lighthouse"
    )
    index.upsert([doc])
    assert index.versions("t1").items == [("m1", 4)]
    query = IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=5, text="lighthouse")
    assert [i for i, _ in index.search(query).keyword] == ["m1"]


@needs_engine
def test_keyword_scores_are_fts5_bm25_over_every_document_of_the_tenant(make_index: IndexFactory) -> None:
    """The channel ranks as the embedded index: FTS5's BM25 with statistics over the tenant's
    documents (as FTS5's are over the tenant's table), context terms at `CONTEXT_WEIGHT`; another
    tenant's documents count for nothing."""
    index = make_index()
    rng = np.random.default_rng(11)
    docs = {
        ("t1", "a"): ("The lighthouse keeper's daughter rowed to the harbour.", ""),
        ("t1", "b"): ("A lighthouse at the harbour, painted red and white.", "[8 May 2023] keeper"),
        ("t1", "c"): ("Harbour cranes unload containers at night.", "lighthouse lighthouse"),
        ("t1", "d"): ("Nothing to see here.", "the keeper's log"),
        ("t2", "e"): ("Lighthouse lighthouse lighthouse keeper harbour.", ""),
        ("t2", "f"): ("Another tenant's harbour.", ""),
    }
    index.upsert(
        [
            IndexDocument(memory(mid, text, tenant_id=tenant), unit(rng), context=ctx)
            for (tenant, mid), (text, ctx) in docs.items()
        ]
    )
    text = "lighthouse keeper's harbour"
    corpus = [(mid, text_terms(body), text_terms(ctx)) for (t, mid), (body, ctx) in docs.items() if t == "t1"]
    expected = bm25_rank_fields(corpus, text, 10, CONTEXT_WEIGHT)
    hits = index.search(IndexQuery("t1", MemoryFilter(), 10, text=text)).keyword
    assert ids(hits) == ids(expected)
    assert [s for _, s in hits] == pytest.approx([s for _, s in expected], rel=1e-12)


@needs_engine
def test_the_shortlist_counts_a_repeated_phrase(make_index: IndexFactory) -> None:
    """`limit=1` shortlists 3: the long note saying "terraform" three times is BM25's best, above
    four short notes saying it once; a shortlist that only knew which phrases match would drop it."""
    index = make_index()
    texts = {"rep": "terraform build then terraform push then terraform tag"}
    texts.update({f"short-{i}": f"terraform lesson {i}" for i in range(4)})
    texts.update({f"other-{i}": f"lunch with the team {i}" for i in range(6)})
    rng = np.random.default_rng(5)
    index.upsert([IndexDocument(memory(mid, text), unit(rng)) for mid, text in texts.items()])
    corpus = [(mid, text_terms(text), []) for mid, text in texts.items()]
    for limit in (1, 3):
        expected = bm25_rank_fields(corpus, "terraform", limit, CONTEXT_WEIGHT)
        hits = index.search(IndexQuery("t1", MemoryFilter(), limit, text="terraform")).keyword
        assert ids(hits) == ids(expected)
        assert ids(hits)[0] == "rep"


@needs_engine
def test_search_asks_for_a_shortlist_only_when_a_document_of_the_tenant_can_match(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statistics come first; the shortlist rides with the vector channel, and is left out when no
    document of the tenant holds a query phrase (another tenant's documents do not count)."""
    index = make_index()
    rng = np.random.default_rng(6)
    index.upsert(
        [
            IndexDocument(memory("mine", "the lighthouse at dusk"), unit(rng)),
            IndexDocument(memory("theirs", "a quillwort by the pond", tenant_id="t2"), unit(rng)),
        ]
    )
    sent: list[list[dict[str, Any]]] = []
    msearch = index.client.msearch

    def recording(body: list[dict[str, Any]], **kwargs: Any) -> Any:
        sent.append(body[1::2])
        return msearch(body=body, **kwargs)

    monkeypatch.setattr(index.client, "msearch", recording)
    vector = unit(rng)
    hits = index.search(IndexQuery("t1", MemoryFilter(), 5, text="quillwort", vector=vector))
    assert hits.keyword == [] and ids(hits.vector) == ["mine"]
    assert [len(bodies) for bodies in sent] == [3, 1]  # length, legacy, one phrase: counts
    assert all(b["size"] == 0 for b in sent[0]) and "dis_max" in sent[1][0]["query"]  # content and cues' knn

    sent.clear()
    hits = index.search(IndexQuery("t1", MemoryFilter(), 5, text="lighthouse", vector=vector))
    assert ids(hits.keyword) == ["mine"]
    assert [len(bodies) for bodies in sent] == [3, 2]
    assert "script_score" in sent[1][0]["query"] and "dis_max" in sent[1][1]["query"]


@needs_engine
def test_an_index_whose_term_fields_predate_the_boolean_similarity_keeps_working(
    make_index: IndexFactory,
) -> None:
    """Such an index (term fields scored by BM25) cannot change a field's similarity: `ensure_schema`
    leaves them as they are, and search still ranks by FTS5's BM25 (its shortlist ordered partly by the
    engine's statistics until `rearview reindex`)."""
    index = make_index(index_version=2)
    alias = index.config.alias
    index.client.indices.delete(index=f"{alias}-v2")
    body = index_body(index.config)
    for field in (TERM_FIELDS["body"], TERM_FIELDS["context"]):
        body["mappings"]["properties"][field] = {"type": "text", "analyzer": "whitespace"}
    index.client.indices.create(index=f"{alias}-v2", body=body)
    index.client.indices.put_alias(index=f"{alias}-v2", name=alias)

    index.ensure_schema()
    props = index.client.indices.get_mapping(index=alias)[f"{alias}-v2"]["mappings"]["properties"]
    assert "similarity" not in props[TERM_FIELDS["body"]]
    rng = np.random.default_rng(7)
    texts = {"a": "the lighthouse keeper", "b": "a lighthouse", "c": "harbour cranes at night"}
    index.upsert([IndexDocument(memory(mid, text), unit(rng)) for mid, text in texts.items()])
    expected = bm25_rank_fields(
        [(mid, text_terms(text), []) for mid, text in texts.items()], "lighthouse keeper", 10, CONTEXT_WEIGHT
    )
    hits = index.search(IndexQuery("t1", MemoryFilter(), 10, text="lighthouse keeper")).keyword
    assert ids(hits) == ids(expected)
    assert [s for _, s in hits] == pytest.approx([s for _, s in expected], rel=1e-12)


@needs_engine
def test_a_document_indexed_before_the_term_fields_is_found_and_scored_from_its_text(
    make_index: IndexFactory,
) -> None:
    index = make_index()
    index.upsert([IndexDocument(memory("new", "the lighthouse at dusk"), unit(np.random.default_rng(2)))])
    legacy = document_source(memory("old", "a lighthouse keeper"), unit(np.random.default_rng(3)), "")
    for field in TERM_FIELDS.values():
        del legacy[field]
    index.client.index(index=index.config.alias, id="t1:old", body=legacy, refresh=True)

    hits = index.search(IndexQuery("t1", MemoryFilter(), 10, text="lighthouse keeper")).keyword
    assert ids(hits) == ["old", "new"]
    assert all(score > 0 for _, score in hits)


@needs_engine
def test_the_index_records_its_embedding_model_and_another_model_is_named(
    make_index: IndexFactory, opensearch_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 46.10: vectors of two models must not share an index unnoticed (SQLite keeps a file per model)."""
    index = make_index(embedding_model="openai:bge-m3:8")
    alias = index.config.alias
    meta = index.client.indices.get_mapping(index=alias)[f"{alias}-v1"]["mappings"]["_meta"]
    assert meta == {"embedding_model": "openai:bge-m3:8"}
    index.ensure_schema()
    assert index.space_notice is None  # the same model: nothing to say

    switched = OpenSearchMemoryIndex(make_config(opensearch_url, alias=alias, embedding_model="onnx:e5:8"))
    with caplog.at_level(logging.WARNING):
        switched.ensure_schema()
    assert switched.space_notice is not None and "openai:bge-m3:8" in switched.space_notice
    assert "rearview reindex" in caplog.text

    # An index from before the model was recorded is taken to be the current model's, and says so.
    index.client.indices.put_mapping(index=alias, body={"_meta": {}})
    switched.space_notice = None
    switched.ensure_schema()
    assert switched.space_notice is None
    meta = index.client.indices.get_mapping(index=alias)[f"{alias}-v1"]["mappings"]["_meta"]
    assert meta == {"embedding_model": "onnx:e5:8"}

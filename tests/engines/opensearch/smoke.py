"""Smoke check of the embedded test OpenSearch node (run by hand, not by pytest).

    .venv/bin/python -m tests.engines.opensearch.smoke

Starts a node (or uses $REARVIEW_OPENSEARCH_URL), then with opensearch-py:
a k-NN index (lucene engine, HNSW, cosine, dim 8) with keyword fields and a
cjk-analysed text field; 2 tenants (5 and 2000 docs); filtered k-NN for the
small tenant; _msearch with BM25 + k-NN; an alias swap; analyzer checks.
Prints timings and memory use. Exits non-zero on the first failed check.
"""

from __future__ import annotations

import random
import sys
import time
from typing import Any

from opensearchpy import OpenSearch, helpers

from tests.engines.opensearch_node import OpenSearchNode, external_url

DIM = 8


def _vec(rng: random.Random) -> list[float]:
    return [rng.uniform(-1.0, 1.0) for _ in range(DIM)]


def _index_body() -> dict[str, Any]:
    return {
        "settings": {
            "index": {"knn": True, "number_of_shards": 1, "number_of_replicas": 0},
        },
        "mappings": {
            "properties": {
                "tenant": {"type": "keyword"},
                "kind": {"type": "keyword"},
                "text": {"type": "text", "analyzer": "cjk"},
                "embedding": {
                    "type": "knn_vector",
                    "dimension": DIM,
                    "method": {
                        "name": "hnsw",
                        "engine": "lucene",
                        "space_type": "cosinesimil",
                        "parameters": {"m": 16, "ef_construction": 100},
                    },
                },
            }
        },
    }


def check(client: OpenSearch) -> None:
    """Run every check; raise AssertionError on the first failure."""
    rng = random.Random(7)
    for name in ("rv-smoke-v1", "rv-smoke-v2"):
        client.indices.delete(index=name, ignore=[404])
    client.indices.create(index="rv-smoke-v1", body=_index_body())
    client.indices.put_alias(index="rv-smoke-v1", name="rv-smoke")

    texts = [
        "我喜欢吃苹果",
        "今天天气很好",
        "记忆服务测试",
        "the quick brown fox",
        "向量检索",
    ]
    actions: list[dict[str, Any]] = []
    for i in range(5):
        actions.append(
            {
                "_index": "rv-smoke",
                "_id": f"small-{i}",
                "tenant": "small",
                "kind": "note",
                "text": texts[i],
                "embedding": _vec(rng),
            }
        )
    for i in range(2000):
        actions.append(
            {
                "_index": "rv-smoke",
                "_id": f"big-{i}",
                "tenant": "big",
                "kind": "note" if i % 2 else "fact",
                "text": f"big tenant memory {i} 大量的记忆 {i % 13}",
                "embedding": _vec(rng),
            }
        )
    t0 = time.monotonic()
    ok, errors = helpers.bulk(client, actions, refresh="wait_for", chunk_size=500)
    assert ok == 2005 and not errors, errors
    print(f"bulk indexed 2005 docs in {time.monotonic() - t0:.2f}s")

    query = _vec(rng)
    t0 = time.monotonic()
    res = client.search(
        index="rv-smoke",
        body={
            "size": 5,
            "query": {
                "knn": {
                    "embedding": {
                        "vector": query,
                        "k": 5,
                        "filter": {"bool": {"filter": [{"term": {"tenant": "small"}}]}},
                    }
                }
            },
        },
    )
    hits = res["hits"]["hits"]
    assert len(hits) == 5, f"filtered knn returned {len(hits)} hits"
    assert all(h["_source"]["tenant"] == "small" for h in hits)
    print(f"filtered knn (small tenant, k=5): {len(hits)} hits in {time.monotonic() - t0:.3f}s")

    res = client.search(
        index="rv-smoke",
        body={
            "size": 10,
            "query": {
                "knn": {
                    "embedding": {
                        "vector": query,
                        "k": 10,
                        "filter": {
                            "bool": {
                                "filter": [
                                    {"term": {"tenant": "big"}},
                                    {"term": {"kind": "fact"}},
                                ]
                            }
                        },
                    }
                }
            },
        },
    )
    hits = res["hits"]["hits"]
    assert len(hits) == 10 and all(h["_source"]["kind"] == "fact" for h in hits)
    print("filtered knn (big tenant, kind=fact, k=10): 10 hits")

    body = [
        {"index": "rv-smoke"},
        {
            "size": 3,
            "query": {
                "bool": {
                    "must": [{"match": {"text": "苹果"}}],
                    "filter": [{"term": {"tenant": "small"}}],
                }
            },
        },
        {"index": "rv-smoke"},
        {
            "size": 3,
            "query": {
                "knn": {
                    "embedding": {
                        "vector": query,
                        "k": 3,
                        "filter": {"term": {"tenant": "small"}},
                    }
                }
            },
        },
    ]
    res = client.msearch(body=body)
    bm25, knn = res["responses"]
    assert "error" not in bm25 and "error" not in knn, res
    assert bm25["hits"]["hits"][0]["_id"] == "small-0", bm25["hits"]["hits"]
    assert len(knn["hits"]["hits"]) == 3
    print(f"msearch: bm25 top={bm25['hits']['hits'][0]['_id']}, knn hits={len(knn['hits']['hits'])}")

    # Alias swap: new index, copy, atomically repoint the alias.
    client.indices.create(index="rv-smoke-v2", body=_index_body())
    client.reindex(
        body={"source": {"index": "rv-smoke-v1"}, "dest": {"index": "rv-smoke-v2"}},
        refresh=True,
        wait_for_completion=True,
    )
    client.indices.update_aliases(
        body={
            "actions": [
                {"remove": {"index": "rv-smoke-v1", "alias": "rv-smoke"}},
                {"add": {"index": "rv-smoke-v2", "alias": "rv-smoke"}},
            ]
        }
    )
    assert list(client.indices.get_alias(name="rv-smoke")) == ["rv-smoke-v2"]
    assert client.count(index="rv-smoke")["count"] == 2005
    print("alias swap v1 -> v2 (reindex): ok, 2005 docs behind alias")

    for analyzer in ("standard", "cjk", "smartcn"):
        res = client.indices.analyze(body={"analyzer": analyzer, "text": "我喜欢吃苹果"})
        tokens = [t["token"] for t in res["tokens"]]
        print(f"analyzer {analyzer}: {tokens}")
    res = client.indices.analyze(body={"tokenizer": "smartcn_tokenizer", "text": "记忆服务测试"})
    print(f"tokenizer smartcn_tokenizer: {[t['token'] for t in res['tokens']]}")

    plugins = client.cat.plugins(format="json")
    print(f"plugins: {[p['component'] for p in plugins]}")
    for name in ("rv-smoke-v1", "rv-smoke-v2"):
        client.indices.delete(index=name)


def main() -> int:
    """Start (or reuse) a node, run the checks, report timings."""
    url = external_url()
    node: OpenSearchNode | None = None
    if url is None:
        t0 = time.monotonic()
        node = OpenSearchNode.start()
        print(
            f"node up at {node.url} in {time.monotonic() - t0:.1f}s "
            f"(JVM spawn to yellow/green: {node.started_in_s:.1f}s), "
            f"RSS {(node.rss_bytes() or 0) / 2**20:.0f} MiB"
        )
        url = node.url
    client = OpenSearch(hosts=[url], timeout=60)
    try:
        check(client)
        if node is not None:
            print(f"RSS after checks: {(node.rss_bytes() or 0) / 2**20:.0f} MiB")
            t0 = time.monotonic()
            node.stop()
            print(f"stopped in {time.monotonic() - t0:.1f}s")
    finally:
        if node is not None:
            node.stop()
    print("SMOKE OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

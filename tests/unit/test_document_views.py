"""benchmarks/recall/document_views.py: the mixed vector, the AUC and the everyday table it prints."""

from __future__ import annotations

import numpy as np
from benchmarks.recall.document_views import asked_vectors, auc, centring_cost, everyday, mixed

from rearview.embedders.hashing import HashingEmbedder
from rearview.service.search.baseline import Baselines
from rearview.service.search.centring import centred


def test_alpha_zero_is_the_passage_and_every_mix_is_unit_length() -> None:
    rng = np.random.default_rng(7)
    passages = rng.normal(size=(4, 8)).astype(np.float32)
    passages /= np.linalg.norm(passages, axis=1, keepdims=True)
    queries = rng.normal(size=(4, 8)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    assert np.allclose(mixed(passages, queries, 0.0), passages, atol=1e-6)
    blend = mixed(passages, queries, 0.3)
    assert np.allclose(np.linalg.norm(blend, axis=1), 1.0, atol=1e-6)
    assert not np.allclose(blend, passages, atol=1e-3)


def test_auc_counts_pairs_and_halves_ties() -> None:
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5], [0.5]) == 0.5


def test_the_everyday_table_scores_each_variant_per_kind_and_per_user() -> None:
    dataset = {
        "users": [
            {
                "user": "u1",
                "memories": [
                    {"key": "m1", "content": "Ann drives a white Tesla Model 3"},
                    {"key": "m2", "content": "Ann is allergic to peanuts"},
                ],
                "questions": [
                    {"query": "white Tesla Model 3", "kind": "keyword", "answers": ["m1"]},
                    {"query": "allergic to peanuts", "kind": "keyword", "answers": ["m2"]},
                    {"query": "favourite opera", "kind": "nothing", "answers": []},
                ],
            }
        ]
    }
    table = everyday(HashingEmbedder(), dataset, [(0.0, 0.0), (0.5, 0.0), (0.3, 0.5)])
    assert "| all | 2 | 1.000 / 1.000 | 1.000 / 1.000 | 1.000 / 1.000 |" in table
    assert "| user u1 | 2 |" in table
    assert "nothing stored: AUC" in table
    assert "alpha 0.5 against alpha 0, users of 1" in table
    assert "alpha 0.3, centring 0.5 against alpha 0, users of 1" in table


def test_a_centred_variant_asks_with_the_searchers_centred_query() -> None:
    embedder = HashingEmbedder()
    texts = ["white Tesla Model 3", "特斯拉"]
    baselines = Baselines(embedder)
    plain = asked_vectors(embedder, baselines, texts, 0.0)
    assert np.allclose(plain, embedder.embed_queries(texts))
    moved = asked_vectors(embedder, baselines, texts, 0.5)
    assert np.allclose(moved, centred(texts, plain, baselines.question_means(), 0.5))
    assert not np.allclose(moved, plain, atol=1e-3)


def test_the_centring_cost_line_names_the_means_and_a_searchs_phrasings() -> None:
    line = centring_cost(HashingEmbedder(), ["white Tesla Model 3", "特斯拉", "allergic to peanuts"], 0.5)
    assert line.startswith("centring CPU: the background's means ")
    assert " us a search, beside " in line

"""Okapi BM25 over pre-tokenized documents: the in-memory index and the degraded store search use it."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from rearview.text import query_tokens

BM25_K1 = 1.2
BM25_B = 0.75


def bm25_rank(docs: Sequence[tuple[str, list[str]]], text: str, limit: int) -> list[tuple[str, float]]:
    """Okapi BM25 (k1=1.2, b=0.75) of `text` over tokenized `docs`; only docs sharing a term score."""
    terms = query_tokens(text)
    if not docs or not terms:
        return []
    n = len(docs)
    avg_len = sum(len(t) for _, t in docs) / n or 1.0
    counts = [(doc_id, Counter(toks), len(toks)) for doc_id, toks in docs]
    df = {term: sum(1 for _, c, _ in counts if term in c) for term in terms}
    scored: list[tuple[str, float]] = []
    for doc_id, tf, length in counts:
        score = 0.0
        for term in terms:
            f = tf.get(term, 0)
            if f:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * f * (BM25_K1 + 1) / (f + BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len))
        if score > 0:
            scored.append((doc_id, score))
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored[:limit]

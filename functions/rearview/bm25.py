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
    return bm25_rank_fields([(doc_id, toks, []) for doc_id, toks in docs], text, limit, 0.0)


def bm25_rank_fields(
    docs: Sequence[tuple[str, list[str], list[str]]], text: str, limit: int, context_weight: float
) -> list[tuple[str, float]]:
    """BM25 over documents of two fields, (id, body tokens, context tokens), as SQLite FTS5 scores them.

    A term's frequency is its body count plus `context_weight` times its context count; the
    document length and the document frequency count both fields.
    """
    terms = query_tokens(text)
    if not docs or not terms:
        return []
    n = len(docs)
    avg_len = sum(len(body) + len(ctx) for _, body, ctx in docs) / n or 1.0
    counts = [(doc_id, Counter(body), Counter(ctx), len(body) + len(ctx)) for doc_id, body, ctx in docs]
    df = {term: sum(1 for _, b, c, _ in counts if term in b or term in c) for term in terms}
    scored: list[tuple[str, float]] = []
    for doc_id, body, ctx, length in counts:
        score = 0.0
        for term in terms:
            f = body.get(term, 0) + context_weight * ctx.get(term, 0)
            if f:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * f * (BM25_K1 + 1) / (f + BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len))
        if score > 0:
            scored.append((doc_id, score))
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored[:limit]

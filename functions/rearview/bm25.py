"""Okapi BM25 over pre-tokenized documents: the in-memory index and the degraded store search use it.

Scored as SQLite FTS5's `bm25()` scores the embedded index, so the in-memory double ranks as the
reference does: the same Porter-stemmed terms (`fts_terms`), k1 = 1.2, b = 0.75, and FTS5's IDF
`ln((N - n + 0.5) / (n + 0.5))`, floored at 1e-6 (a term in more than half the documents counts
almost nothing). Unlike FTS5, N and the average length are those of the documents given (the
tenant's, filtered), not of every tenant's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rearview.fts_terms import fts_terms
from rearview.text import query_tokens

BM25_K1 = 1.2
BM25_B = 0.75
_MIN_IDF = 1e-6


def bm25_rank(docs: Sequence[tuple[str, list[str]]], text: str, limit: int) -> list[tuple[str, float]]:
    """Okapi BM25 (k1=1.2, b=0.75) of `text` over tokenized `docs`; only docs sharing a term score."""
    return bm25_rank_fields([(doc_id, fts_terms(toks), []) for doc_id, toks in docs], text, limit, 0.0)


def bm25_rank_fields(
    docs: Sequence[tuple[str, list[str], list[str]]], text: str, limit: int, context_weight: float
) -> list[tuple[str, float]]:
    """BM25 over documents of two fields, (id, body terms, context terms), as SQLite FTS5 scores them.

    The terms are FTS5's (`fts_terms.text_terms`), computed once when a document is indexed.

    Each distinct query token is a phrase of its FTS5 terms (`"melanie's"` is `melanie s`, as the
    embedded index queries it). A phrase's frequency is its body count plus `context_weight` times
    its context count; the document length and the document frequency count both fields.
    """
    phrases = [p for p in (tuple(fts_terms([t])) for t in query_tokens(text)) if p]
    if not docs or not phrases:
        return []
    n = len(docs)
    avg_len = sum(len(body) + len(ctx) for _, body, ctx in docs) / n or 1.0
    freqs = [
        (doc_id, [(_count(body, p), _count(ctx, p)) for p in phrases], len(body) + len(ctx))
        for doc_id, body, ctx in docs
    ]
    df = [sum(1 for _, fs, _ in freqs if fs[i] != (0, 0)) for i in range(len(phrases))]
    idf = [max(_MIN_IDF, math.log((n - d + 0.5) / (d + 0.5))) for d in df]
    scored: list[tuple[str, float]] = []
    for doc_id, fs, length in freqs:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len)
        weighted = [(w, b + context_weight * c) for w, (b, c) in zip(idf, fs, strict=True)]
        score = sum(w * f * (BM25_K1 + 1) / (f + norm) for w, f in weighted if f)
        if score > 0:
            scored.append((doc_id, score))
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored[:limit]


def _count(terms: list[str], phrase: tuple[str, ...]) -> int:
    """Occurrences of `phrase` (consecutive terms) in `terms`."""
    size = len(phrase)
    if size == 1:
        return terms.count(phrase[0])
    return sum(1 for i in range(len(terms) - size + 1) if tuple(terms[i : i + size]) == phrase)

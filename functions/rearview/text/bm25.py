"""Okapi BM25 over pre-tokenized documents, scored as SQLite FTS5's `bm25()` scores the embedded index.

The in-memory index, the degraded store search and OpenSearch's keyword channel rank with it, so
every backend ranks as the reference does: the same Porter-stemmed terms (`fts_terms`), k1 = 1.2,
b = 0.75, each distinct query token a phrase of its terms, FTS5's IDF
`ln((N - n + 0.5) / (n + 0.5))` floored at 1e-6 (a term in more than half the documents counts
almost nothing), and a document of two or three fields (body, context, recall cues) whose phrase
frequency is `body + context_weight * context + cue_weight * cues` and whose length counts them all.

The corpus statistics (`CorpusStats`: N, total length, each phrase's document frequency) are the
caller's, and always one tenant's: FTS5 takes them over the tenant's own table, `bm25_rank_fields`
over the documents it is given, OpenSearch's adapter from an aggregation over the tenant's documents.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rearview.text import query_tokens
from rearview.text.fts_terms import fts_terms

BM25_K1 = 1.2
BM25_B = 0.75
_MIN_IDF = 1e-6

Phrase = tuple[str, ...]
FieldDoc = tuple[str, list[str], list[str]]
"""(id, body terms, context terms): a document as FTS5 holds it."""
CuedDoc = tuple[str, list[str], list[str], list[str]]
"""(id, body terms, context terms, cue terms): a document with its recall cues' column."""
AnyDoc = FieldDoc | CuedDoc


def cue_terms(doc: AnyDoc) -> list[str]:
    """The document's cue terms (none for a two-field document)."""
    return doc[3] if len(doc) == 4 else []


@dataclass(frozen=True)
class CorpusStats:
    """What BM25 needs of the whole corpus: its size, total length in terms, each phrase's document count."""

    rows: int
    terms: int
    hits: tuple[int, ...]
    """Per query phrase (in `query_phrases` order): documents holding it in either field."""

    def idf(self) -> list[float]:
        """FTS5's IDF per phrase, floored at 1e-6."""
        n = self.rows
        return [max(_MIN_IDF, math.log((n - d + 0.5) / (d + 0.5))) for d in self.hits]

    def ceiling(self) -> float:
        """The query's BM25 scale: the score of an average-length document holding each phrase once.

        With tf = 1 and length = average, BM25's term weight is `idf * (k1 + 1) / (1 + k1) = idf`,
        so this is the sum of the phrases' IDF. A keyword score divided by it is the share of the
        query's information a document matches, whatever the corpus size or the query's length.
        """
        return sum(self.idf())

    @property
    def avg_len(self) -> float:
        """Average document length in terms (1.0 for an empty corpus)."""
        return self.terms / self.rows if self.rows and self.terms else 1.0


def query_phrases(text: str) -> list[Phrase]:
    """The phrases the keyword channel searches, as the embedded index queries them.

    Each distinct query token's FTS5 terms: `"melanie's"` is the phrase `melanie s`.
    """
    return [p for p in (tuple(fts_terms([t])) for t in query_tokens(text)) if p]


def bm25_rank(docs: Sequence[tuple[str, list[str]]], text: str, limit: int) -> list[tuple[str, float]]:
    """Okapi BM25 of `text` over tokenized `docs`; only docs sharing a term score."""
    return bm25_search(docs, text, limit)[0]


def bm25_search(
    docs: Sequence[tuple[str, list[str]]], text: str, limit: int
) -> tuple[list[tuple[str, float]], float]:
    """`bm25_rank` and the query's `CorpusStats.ceiling` over the same documents."""
    return bm25_search_fields([(doc_id, fts_terms(toks), []) for doc_id, toks in docs], text, limit, 0.0)


def bm25_rank_fields(
    docs: Sequence[AnyDoc], text: str, limit: int, context_weight: float, cue_weight: float = 0.0
) -> list[tuple[str, float]]:
    """BM25 over two-field documents `(id, body terms, context terms)`, the corpus being `docs` themselves.

    The terms are FTS5's (`fts_terms.text_terms`), computed once when a document is indexed.
    """
    return bm25_search_fields(docs, text, limit, context_weight, cue_weight)[0]


def bm25_search_fields(
    docs: Sequence[AnyDoc], text: str, limit: int, context_weight: float, cue_weight: float = 0.0
) -> tuple[list[tuple[str, float]], float]:
    """`bm25_rank_fields` and the query's `CorpusStats.ceiling` over the same documents (0 if none)."""
    phrases = query_phrases(text)
    if not docs or not phrases:
        return [], 0.0
    stats = CorpusStats(
        rows=len(docs),
        terms=sum(len(d[1]) + len(d[2]) + len(cue_terms(d)) for d in docs),
        hits=tuple(
            sum(1 for d in docs if _count(d[1], p) or _count(d[2], p) or _count(cue_terms(d), p))
            for p in phrases
        ),
    )
    return bm25_score(docs, phrases, stats, context_weight, limit, cue_weight), stats.ceiling()


def bm25_score(
    docs: Iterable[AnyDoc],
    phrases: Sequence[Phrase],
    stats: CorpusStats,
    context_weight: float,
    limit: int,
    cue_weight: float = 0.0,
) -> list[tuple[str, float]]:
    """The best `limit` of `docs` by BM25 of `phrases` under `stats`.

    Returns (id, score), score descending, ties by id; documents holding no phrase are left out.
    """
    idf = stats.idf()
    avg_len = stats.avg_len
    scored: list[tuple[str, float]] = []
    for doc in docs:
        doc_id, body, ctx, cues = doc[0], doc[1], doc[2], cue_terms(doc)
        norm = BM25_K1 * (1 - BM25_B + BM25_B * (len(body) + len(ctx) + len(cues)) / avg_len)
        score = 0.0
        for weight, phrase in zip(idf, phrases, strict=True):
            freq = _count(body, phrase) + context_weight * _count(ctx, phrase)
            if cues:
                freq += cue_weight * _count(cues, phrase)
            if freq:
                score += weight * freq * (BM25_K1 + 1) / (freq + norm)
        if score > 0:
            scored.append((doc_id, score))
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored[:limit]


def _count(terms: list[str], phrase: Phrase) -> int:
    """Occurrences of `phrase` (consecutive terms) in `terms`."""
    size = len(phrase)
    if size == 1:
        return terms.count(phrase[0])
    return sum(1 for i in range(len(terms) - size + 1) if tuple(terms[i : i + size]) == phrase)

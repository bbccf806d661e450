"""A bounded LRU of query vectors: an agent that asks the same thing again costs no embedding."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from rearview.errors import InvalidInputError
from rearview.ports import Vector


class QueryCache:
    """The last `size` query vectors, keyed by vector space (`Embedder.model_id`) and exact text.

    Thread-safe. `get` returns a fresh copy, so no caller can alter what another one reads;
    `size` 0 keeps nothing. Per process: nothing is shared between servers or Lambda instances.
    """

    def __init__(self, size: int) -> None:
        if size < 0:
            raise InvalidInputError("cache_size", f"must be >= 0 (got {size})")
        self._size = size
        self._lock = threading.Lock()
        self._vectors: OrderedDict[tuple[str, str], Vector] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)

    def get(self, model_id: str, text: str) -> Vector | None:
        """A copy of the cached vector (now the most recently used), or None."""
        key = (model_id, text)
        with self._lock:
            vector = self._vectors.get(key)
            if vector is None:
                return None
            self._vectors.move_to_end(key)
        return vector.copy()

    def put(self, model_id: str, text: str, vector: Vector) -> None:
        """Keep a copy of `vector`; the least recently used entry goes once `size` is passed."""
        if self._size == 0:
            return
        kept = np.array(vector, dtype=np.float32)
        kept.flags.writeable = False
        key = (model_id, text)
        with self._lock:
            self._vectors[key] = kept
            self._vectors.move_to_end(key)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)

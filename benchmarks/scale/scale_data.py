"""The scale benchmark's data: a realistic mix of tenant sizes, clustered vectors, varied texts (seeded).

`Plan.of(memories, tenants)` fixes everything from a seed:

- sizes: one big tenant of a tenth of the memories (100k at 1M); the rest spread over the other
  tenants half evenly (the many small ones: about 45 memories each at 1M/10k) and half by a Zipf
  law (exponent 1.1: a tail of a few tenants with thousands);
- the load order: the probe tenants (the small tenants whose searches are timed) come first, so
  they are complete from the first checkpoint on and every later one times the same searches in
  a larger index; then every other memory in a random order, the big tenant's within the first
  30% (so a run stopped before its end has timed the whole big tenant from the 300k checkpoint on);
- vectors: `TOPICS` random unit centres sharing a common direction (real sentence embeddings are
  anisotropic: unrelated texts still have cosine ~0.3 here); each tenant draws its own topics (more
  for a larger tenant), each memory is a topic's centre plus Gaussian noise, normalized. Row `p`
  comes from the RNG of its batch, so any process regenerates any document's vector
  (`vectors(start, stop)`) without keeping a million of them;
- texts: the latency benchmarks' template sentences (`benchmarks.common.synthetic_memories`), one
  or two a memory, so BM25 matches many documents of a large tenant and ranks them by real statistics.

Texts and vectors are drawn independently: the benchmark measures cost and the k-NN's recall
against exact cosine, not relevance.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import numpy as np

from benchmarks.common.synthetic_memories import (
    QUERY_TEMPLATES,
    TAGS,
    TEMPLATES,
    TYPE_WEIGHTS,
    Synthetic,
    fill_template,
    to_memory,
)
from rearview.models import Memory, Visibility

DIMENSION: Final = 384
"""As the ONNX e5 embedder the service ships with (`onnx:multilingual-e5-small-int8:384`)."""
TOPICS: Final = 4096
NOISE: Final = 0.045
"""Per-dimension noise: a memory has cosine ~0.75 with its topic's centre (384 dimensions)."""
COMMON: Final = 0.55
"""Weight of the direction every centre shares (anisotropy)."""
BATCH: Final = 1000
"""Rows per RNG batch of `vectors`."""
PROBES: Final = 40
"""Small tenants whose searches are timed."""
BIG_SHARE: Final = 0.1


def tenant_id(t: int) -> str:
    return f"t{t:06d}"


def memory_id(position: int) -> str:
    return f"m{position:09d}"


@dataclass(frozen=True)
class Plan:
    """Who owns which memory, in which order memories load, and how to regenerate any vector."""

    memories: int
    tenants: int
    seed: int
    sizes: np.ndarray
    """Memories per tenant; tenant 0 is the big one."""
    order: np.ndarray
    """Tenant of each load position (`memories + extra` of them)."""
    probes: tuple[int, ...]
    topics: list[np.ndarray]
    """Each tenant's topic numbers."""
    centres: np.ndarray

    @classmethod
    def of(cls, memories: int, tenants: int, extra: int = 0, seed: int = 49, big: int | None = None) -> Plan:
        """The plan for `memories` over `tenants` (2 or more), and `extra` later writes.

        `big`: the big tenant's memories (default `BIG_SHARE` of them); the others share the rest.
        """
        big = max(1, int(memories * BIG_SHARE)) if big is None else big
        if tenants < 2 or memories < 10 * tenants or not 1 <= big <= memories - (tenants - 1):
            raise ValueError("need at least 2 tenants, 10 memories a tenant, and one for each small tenant")
        rng = np.random.default_rng(seed)
        rest = memories - big
        even = np.full(tenants - 1, rest // 2 // (tenants - 1), dtype=np.int64)
        zipf = 1.0 / np.arange(1, tenants, dtype=np.float64) ** 1.1
        tail = np.floor(zipf / zipf.sum() * (rest - even.sum())).astype(np.int64)
        sizes = np.concatenate([[big], even + tail])
        sizes[1 + rng.permutation(tenants - 1)[: memories - sizes.sum()]] += 1  # the remainder
        median = float(np.median(sizes[1:]))
        small = [t for t in range(1, tenants) if sizes[t] <= 1.5 * median]
        probes = tuple(sorted(rng.choice(small, size=min(PROBES, len(small)), replace=False).tolist()))
        is_probe = np.zeros(tenants, dtype=bool)
        is_probe[list(probes)] = True
        owners = np.repeat(np.arange(tenants), sizes)
        first = owners[is_probe[owners]]
        mixed = rng.permutation(owners[~is_probe[owners] & (owners != 0)])
        early = min(len(mixed), 2 * big)  # the big tenant is whole by 30% of the load (and mixed in)
        others = np.concatenate(
            [rng.permutation(np.concatenate([np.zeros(big, np.int64), mixed[:early]])), mixed[early:]]
        )
        more = rng.choice(tenants, size=extra, p=sizes / sizes.sum()) if extra else np.zeros(0, np.int64)
        order = np.concatenate([first, others, more]).astype(np.int32)
        common = rng.standard_normal(DIMENSION)
        common /= np.linalg.norm(common)
        raw = rng.standard_normal((TOPICS, DIMENSION))
        raw /= np.linalg.norm(raw, axis=1, keepdims=True)
        centres = COMMON * common + np.sqrt(1 - COMMON**2) * raw
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        topics = [rng.choice(TOPICS, size=int(np.clip(s // 40, 3, 400)), replace=False) for s in sizes]
        return cls(memories, tenants, seed, sizes, order, probes, topics, centres.astype(np.float32))

    @property
    def big(self) -> int:
        return 0

    def vectors(self, start: int, stop: int) -> np.ndarray:
        """The unit vectors of load positions `start` to `stop` (float32), the same in every process."""
        out = np.empty((stop - start, DIMENSION), dtype=np.float32)
        for b in range(start // BATCH, (stop - 1) // BATCH + 1):
            lo, hi = b * BATCH, min((b + 1) * BATCH, len(self.order))
            rng = np.random.default_rng([self.seed, 1, b])
            owners = self.order[lo:hi]
            pick = rng.random(hi - lo)
            topic = np.array(
                [self.topics[t][int(u * len(self.topics[t]))] for t, u in zip(owners, pick, strict=True)]
            )
            rows = self.centres[topic] + NOISE * rng.standard_normal((hi - lo, DIMENSION)).astype(np.float32)
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            s, e = max(lo, start), min(hi, stop)
            out[s - start : e - start] = rows[s - lo : e - lo]
        return out

    def positions(self, tenant: int, upto: int) -> np.ndarray:
        """The load positions of `tenant` among the first `upto`."""
        return np.flatnonzero(self.order[:upto] == tenant)

    def query_vector(self, tenant: int, rng: np.random.Generator) -> np.ndarray:
        """A query near one of the tenant's topics (drawn as its memories are)."""
        centre = self.centres[self.topics[tenant][rng.integers(len(self.topics[tenant]))]]
        row = centre + NOISE * rng.standard_normal(DIMENSION).astype(np.float32)
        out: np.ndarray = (row / np.linalg.norm(row)).astype(np.float32)
        return out


def query_text(rng: random.Random) -> str:
    return fill_template(rng.choice(QUERY_TEMPLATES), rng)


def memory_at(plan: Plan, position: int, now: datetime, model_id: str) -> Memory:
    """The memory at load `position`: one or two template sentences, tags, an agent, a session."""
    rng = random.Random(plan.seed * 10_000_019 + position)
    tenant = int(plan.order[position])
    mtype = rng.choices(list(TYPE_WEIGHTS), list(TYPE_WEIGHTS.values()))[0]
    content = fill_template(rng.choice(TEMPLATES[mtype]), rng)
    if rng.random() < 0.5:
        content += " " + fill_template(rng.choice(TEMPLATES[mtype]), rng)
    synthetic = Synthetic(
        content=content,
        type=mtype,
        tags=rng.sample(TAGS, k=rng.choice((0, 1, 1, 2, 3))),
        session_id=f"s{tenant}-{rng.randint(0, 1 + int(plan.sizes[tenant]) // 20)}",
        agent_id=f"agent-{min(int(rng.expovariate(1.0)), 3)}",
        visibility=Visibility.PRIVATE if rng.random() < 0.2 else Visibility.SHARED,
        importance=rng.choice((1, 2, 3, 3, 3, 4, 4, 5)),
        age_days=rng.uniform(0, 170),
    )
    memory = to_memory(synthetic, now, model_id, tenant_id(tenant))
    return memory.model_copy(update={"id": memory_id(position)})

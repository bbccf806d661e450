"""Percentiles of a series of timings, and the CPU one call costs (standard library at import)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Latency:
    """Percentiles of one series of timings, in milliseconds."""

    p50: float
    p95: float
    p99: float
    mean: float

    @classmethod
    def of(cls, samples_s: Sequence[float]) -> Latency:
        import numpy as np  # not at import: see benchmarks/common/__init__.py

        ms = np.asarray(samples_s, dtype=np.float64) * 1000
        p50, p95, p99 = np.percentile(ms, [50, 95, 99])
        return cls(float(p50), float(p95), float(p99), float(ms.mean()))


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank value at `q` (0 to 1): one of the samples, not an interpolation."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_ms(fn: Callable[[], object]) -> float:
    """Thread CPU milliseconds one call of `fn` takes (other threads' and processes' work excluded)."""
    started = time.thread_time()
    fn()
    return (time.thread_time() - started) * 1000


def process_cpu_ms(fn: Callable[[], object]) -> float:
    """Process CPU milliseconds one call of `fn` takes: its worker threads' too, other processes' not."""
    started = time.process_time()
    fn()
    return (time.process_time() - started) * 1000

"""Small test doubles shared across tiers (fakes that record, never MagicMock)."""

from __future__ import annotations


class Sleeps:
    """A `RetryPolicy.sleep` that records the delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)

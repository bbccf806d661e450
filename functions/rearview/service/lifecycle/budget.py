"""How long a lifecycle run may go on: checked before each page, so a run hands over in time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Budget(Protocol):
    """How long a run may go on; checked before each page."""

    def expired(self) -> bool: ...


class Unlimited:
    """A budget that never runs out (CLI runs, tests)."""

    def expired(self) -> bool:
        return False


@dataclass
class Deadline:
    """A wall-clock budget of `seconds` from construction (monotonic clock)."""

    seconds: float
    now: Callable[[], float] = time.monotonic
    _start: float = field(init=False)

    def __post_init__(self) -> None:
        self._start = self.now()

    @classmethod
    def from_remaining_ms(cls, remaining_ms: int, margin_s: float = 15.0) -> Deadline:
        """A budget that ends `margin_s` before a Lambda invocation would time out."""
        return cls(max(0.0, remaining_ms / 1000 - margin_s))

    def expired(self) -> bool:
        return self.now() - self._start >= self.seconds

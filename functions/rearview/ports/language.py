"""The language model port: a chat model that answers one prompt, where a deployment configures one.

Used for consolidation, contradiction checks and ingest (`REARVIEW_LLM`); the offline default has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Completion:
    """A language model's answer and why it stopped (Converse `stopReason`, e.g. `end_turn`)."""

    text: str
    stop_reason: str

    @property
    def truncated(self) -> bool:
        """The answer was cut off at the token limit (`max_tokens`): its end is missing."""
        return self.stop_reason == "max_tokens"


class LanguageModel(Protocol):
    """A chat model that answers one prompt with text (consolidation, contradiction checks, ingest)."""

    @property
    def model_id(self) -> str:
        """Which model answers (recorded in what it produced)."""

    def complete(self, system: str, prompt: str, max_tokens: int) -> str:
        """The model's answer to `prompt` under the `system` instructions; BackendError on failure."""

    def answer(self, system: str, prompt: str, max_tokens: int) -> Completion:
        """`complete`, with the stop reason: a caller that needs the whole answer checks `truncated`."""

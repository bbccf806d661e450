"""Amazon Bedrock `LanguageModel` through the Converse API (any Converse-capable text model).

Request: `system=[{"text": ...}]`, one user message, `inferenceConfig={"maxTokens", "temperature"}`.
Response: the text blocks of `output.message.content`, joined, and `stopReason`. The model id is configuration
(`REARVIEW_LLM_MODEL_ID`), e.g. `amazon.nova-lite-v1:0` or an inference profile id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rearview.backends.bedrock_calls import call_bedrock, create_bedrock_client
from rearview.errors import LanguageModelError
from rearview.ports import Completion
from rearview.shared.lazy import Lazy

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime.client import BedrockRuntimeClient

__all__ = ["BedrockConverseModel"]


class BedrockConverseModel:
    """A `LanguageModel` on Bedrock Converse. The constructor does no I/O (the client is lazy).

    Throttling, model-not-ready and 5xx answers are retried by botocore (standard mode, see
    `rearview.backends.bedrock_calls`), at most `max_attempts` attempts in all; then `LanguageModelError`.
    Anything else (access denied, validation, an answer without text) is a `LanguageModelError` at
    once. An injected `client` brings its own retry configuration.
    """

    def __init__(
        self,
        model_id: str,
        client: BedrockRuntimeClient | None = None,
        temperature: float = 0.0,
        *,
        max_attempts: int = 4,
    ) -> None:
        self._model = model_id
        self._client = Lazy(
            lambda: create_bedrock_client(read_timeout_s=60, max_attempts=max_attempts), client
        )
        self._temperature = temperature

    @property
    def model_id(self) -> str:
        """`bedrock:<model id>`."""
        return f"bedrock:{self._model}"

    def complete(self, system: str, prompt: str, max_tokens: int) -> str:
        """The model's text answer (stripped); `LanguageModelError` if Bedrock fails or returns no text."""
        return self.answer(system, prompt, max_tokens).text

    def answer(self, system: str, prompt: str, max_tokens: int) -> Completion:
        """The text answer (stripped) and `stopReason`; `LanguageModelError` as for `complete`."""
        out = call_bedrock(
            lambda: self._client.get().converse(
                modelId=self._model,
                system=[{"text": system}],
                messages=[{"role": "user", "content": [{"text": prompt}]}],
                inferenceConfig={"maxTokens": max_tokens, "temperature": self._temperature},
            ),
            error=LanguageModelError,
            label=f"Bedrock Converse({self._model})",
        )
        return self._completion(dict(out))

    def _completion(self, out: dict[str, Any]) -> Completion:
        content = out.get("output", {}).get("message", {}).get("content", [])
        text = "".join(block.get("text", "") for block in content if isinstance(block, dict)).strip()
        reason = str(out.get("stopReason", "unknown"))
        if not text:
            raise LanguageModelError(f"Bedrock {self._model} returned no text (stop reason: {reason})")
        return Completion(text, reason)

"""Calling Amazon Bedrock with bounded retries: shared by the Titan embedder and the Converse model."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeVar

from rearview.errors import BackendError
from rearview.retry import RetryPolicy

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime.client import BedrockRuntimeClient

T = TypeVar("T")

RETRYABLE_CODES: Final = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "InternalServerException",
        "ModelTimeoutException",
    }
)
"""Bedrock error codes worth another attempt (throttling, capacity, transient server faults)."""


def call_bedrock(call: Callable[[], T], *, retry: RetryPolicy, error: type[BackendError], label: str) -> T:
    """The result of `call()`, retried with backoff at most `retry.max_attempts` times.

    Retryable error codes and lost connections are retried; any other failure, or the last
    attempt's, raises `error` with a message naming `label`.
    """
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    for attempt in range(retry.max_attempts):
        last = attempt + 1 == retry.max_attempts
        try:
            return call()
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code not in RETRYABLE_CODES or last:
                message = exc.response.get("Error", {}).get("Message", "")
                raise error(f"{label} failed ({code}): {message}") from exc
        except BotoConnectionError as exc:
            if last:
                raise error(f"{label} unreachable: {exc}") from exc
        except BotoCoreError as exc:
            raise error(f"{label} failed: {exc}") from exc
        retry.backoff(attempt)
    raise error(f"{label} gave up")  # pragma: no cover - the loop always returns or raises


def create_bedrock_client(read_timeout_s: float) -> BedrockRuntimeClient:
    """A bedrock-runtime client that makes one attempt per call (`call_bedrock` owns the retries).

    boto3 is imported here, not at module load, to keep Lambda init light.
    """
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "total_max_attempts": 1}, read_timeout=read_timeout_s, connect_timeout=5
    )
    return boto3.client("bedrock-runtime", config=config)

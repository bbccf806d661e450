"""A hard forget leaves no copy of the text anywhere in the data directory once it returns."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import running_server
from tests.mcp_client import BlockingClient, blocking_client


@pytest.fixture
def local(tmp_path: Path) -> Iterator[tuple[BlockingClient, Path]]:
    data_dir = tmp_path / "data"
    with running_server(data_dir) as url, blocking_client(url, "2026-07-28") as client:
        yield client, data_dir


def files_holding(data_dir: Path, secret: str) -> list[str]:
    """Every file under the data dir (store, index, WAL, archive) whose bytes contain the secret."""
    needle = secret.encode()
    return sorted(
        str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file() and needle in p.read_bytes()
    )


def test_hard_forget_leaves_no_copy_on_disk(local: tuple[BlockingClient, Path]) -> None:
    client, data_dir = local
    secret = f"vaultkey{uuid.uuid4().hex}"
    memory = client.call("memory_write", {"content": f"The deploy token is {secret}", "tags": ["ops"]})
    client.call(
        "memory_update", {"memory_id": memory["id"], "content": f"The deploy token is still {secret}"}
    )
    assert files_holding(data_dir, secret)  # the probe can see the text while it is remembered
    client.call("memory_forget", {"ids": [memory["id"]], "hard": True})
    assert files_holding(data_dir, secret) == []

"""The security tier: hostile use of the real HTTP endpoint through the official `mcp` client.

One keyed server per module (two API keys, two tenants) keeps the tier fast; each test plants its
own memories under a fresh token, so tests never depend on one another's leftovers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.e2e.server import running_server
from tests.factories import T0

KEYS = {"key-tenant-a": "tenant-a", "key-tenant-b": "tenant-b"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/security/ carries the `security` marker (`pytest -m security`)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.security)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("security") / "data"


@pytest.fixture(scope="module")
def keyed_url(data_dir: Path) -> Iterator[str]:
    """A running server whose two API keys map to `tenant-a` and `tenant-b`."""
    config = data_dir.parent / "config.toml"
    config.write_text("[api_keys]\n" + "".join(f'"{key}" = "{tenant}"\n' for key, tenant in KEYS.items()))
    with running_server(data_dir, config_file=config) as url:
        yield url


@pytest.fixture
def service() -> MemoryService:
    """An in-memory service for tests that drive the ASGI app in-process (hashing embedder)."""
    clock = ManualClock(T0)
    return MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(64), HashingEmbedder(64), clock)

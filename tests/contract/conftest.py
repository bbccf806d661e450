"""Backends under contract: every store, checkpoint store and index adapter runs the same tests.

A backend joins by adding a factory here. Factories that need an engine (moto, OpenSearch)
get it from the fixtures in `tests/fixtures/`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.backends.sqlite_checkpoints import SQLiteCheckpointStore
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.ports import CheckpointStore, MemoryIndex, MemoryStore
from rearview.shared.clock import ManualClock
from tests.engines.opensearch_config import local_config
from tests.factories import T0

DIMENSION = 32


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def _memory_store(clock: ManualClock, tmp_path: Path, request: pytest.FixtureRequest) -> MemoryStore:
    return InMemoryMemoryStore(clock)


def _sqlite_store(clock: ManualClock, tmp_path: Path, request: pytest.FixtureRequest) -> MemoryStore:
    return SQLiteMemoryStore(tmp_path / "store.sqlite3", clock)


def _dynamodb_store(clock: ManualClock, tmp_path: Path, request: pytest.FixtureRequest) -> MemoryStore:
    from rearview.backends.dynamodb import DynamoDBMemoryStore

    table = request.getfixturevalue("dynamodb_table")  # moto, built from template.yaml's MemoryTable
    return DynamoDBMemoryStore(table, request.getfixturevalue("dynamodb_client"), clock=clock)


STORES: dict[str, Callable[[ManualClock, Path, pytest.FixtureRequest], MemoryStore]] = {
    "memory": _memory_store,
    "sqlite": _sqlite_store,
    "dynamodb": _dynamodb_store,
}


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, clock: ManualClock, tmp_path: Path) -> Iterator[MemoryStore]:
    s = STORES[request.param](clock, tmp_path, request)
    s.ensure_schema()
    yield s


def _dynamodb_checkpoints(tmp_path: Path, request: pytest.FixtureRequest) -> CheckpointStore:
    from rearview.backends.dynamodb import DynamoDBCheckpointStore

    table = request.getfixturevalue("dynamodb_table")  # moto, built from template.yaml's MemoryTable
    return DynamoDBCheckpointStore(table, request.getfixturevalue("dynamodb_client"))


CHECKPOINTS: dict[str, Callable[[Path, pytest.FixtureRequest], CheckpointStore]] = {
    "memory": lambda tmp_path, request: InMemoryCheckpointStore(),
    "sqlite": lambda tmp_path, request: SQLiteCheckpointStore(tmp_path / "lifecycle.sqlite3"),
    "dynamodb": _dynamodb_checkpoints,
}


@pytest.fixture(params=sorted(CHECKPOINTS))
def checkpoints(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CheckpointStore]:
    c = CHECKPOINTS[request.param](tmp_path, request)
    c.ensure_schema()
    yield c


def _memory_index(tmp_path: Path, request: pytest.FixtureRequest) -> MemoryIndex:
    return InMemoryMemoryIndex(DIMENSION)


def _sqlite_index(tmp_path: Path, request: pytest.FixtureRequest) -> MemoryIndex:
    return SQLiteMemoryIndex(tmp_path / "index.sqlite3", DIMENSION)


def _opensearch_index(
    tmp_path: Path, request: pytest.FixtureRequest, assigned_ids: bool = False
) -> MemoryIndex:
    from rearview.backends.opensearch import OpenSearchMemoryIndex

    url = request.getfixturevalue("opensearch_url")
    config = local_config(url, DIMENSION, "rv-c", assigned_ids=assigned_ids or None)
    index = OpenSearchMemoryIndex(config)
    request.addfinalizer(lambda: index.client.indices.delete(index=f"{config.alias}-v*", ignore=[404]))
    return index


def _opensearch_dedicated(tmp_path: Path, request: pytest.FixtureRequest) -> MemoryIndex:
    """The shared index with tenant `t1` in an index of its own (`REARVIEW_OPENSEARCH_DEDICATED_TENANTS=t1`)."""
    from rearview.backends.opensearch import OpenSearchMemoryIndex
    from rearview.backends.opensearch.tenant_indexes import TenantRoutedIndex

    shared = _opensearch_index(tmp_path, request)
    assert isinstance(shared, OpenSearchMemoryIndex)
    routed = TenantRoutedIndex(shared.config, ["t1"], shared.client)
    request.addfinalizer(
        lambda: shared.client.indices.delete(index=f"{shared.config.alias}-t-*", ignore=[404])
    )
    return routed


INDEXES: dict[str, Callable[[Path, pytest.FixtureRequest], MemoryIndex]] = {
    "memory": _memory_index,
    "sqlite": _sqlite_index,
    "opensearch": _opensearch_index,
    "opensearch-dedicated-t1": _opensearch_dedicated,
    "opensearch-serverless-ids": lambda tmp_path, request: _opensearch_index(
        tmp_path, request, assigned_ids=True
    ),
}


@pytest.fixture(
    params=[
        pytest.param(name, marks=[pytest.mark.opensearch] if name.startswith("opensearch") else [])
        for name in sorted(INDEXES)
    ]
)
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryIndex]:
    ix = INDEXES[request.param](tmp_path, request)
    ix.ensure_schema()
    yield ix

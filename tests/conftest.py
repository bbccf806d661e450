"""Shared fixtures for every tier: the engines (moto, OpenSearch) come from `tests/fixtures/`."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

pytest_plugins = ["tests.fixtures.aws", "tests.fixtures.opensearch"]


@pytest.fixture(autouse=True, scope="session")
def _no_test_touches_the_users_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`XDG_DATA_HOME` points into the session's temp directory, for this process and its children.

    A test that forgets `--data-dir` then works on a fresh default data directory instead of the
    machine's `~/.local/share/rearview` (another checkout's data, possibly of a newer schema).
    """
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    yield
    if before is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = before

"""The two-line case of issue 47 through the real endpoint (ONNX e5, as `rearview serve` runs), with the
official MCP client and the Python API: the older memory is named under `conflicts`, the newer ranks
first, and the context block marks the older as possibly outdated."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from rearview import Memory
from tests.e2e.server import running_server
from tests.mcp_client import blocking_client

pytestmark = pytest.mark.slow

OLD = "Priya's manager is Tomás Ortega."
NEW = "Priya's manager is now Hana Kobayashi."


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("conflicts"), embedder="onnx") as served:
        yield served


def test_the_two_line_case_over_mcp(url: str) -> None:
    with blocking_client(url, "2026-07-28") as client:
        old = client.call("memory_write", {"content": OLD})
        raw = client.raw("memory_write", {"content": NEW})
        new = raw.structured_content
        assert new is not None and new["action"] == "created" and "conflicts" not in old
        (conflict,) = new["conflicts"]
        assert conflict["id"] == old["id"] and conflict["content"] == OLD and conflict["written_at"]
        text = raw.content[0].text  # type: ignore[union-attr]
        assert json.loads(text)["conflicts"] == new["conflicts"]  # the text content says the same

        hits = client.call("memory_search", {"query": "who is Priya's manager"})["results"]
        assert [h["id"] for h in hits][:2] == [new["id"], old["id"]]
        block = client.raw("memory_search", {"query": "who is Priya's manager"}).content[0].text  # type: ignore[union-attr]
        older_line = next(line for line in block.splitlines() if line.startswith(f"- id {old['id']} "))
        assert f"possibly outdated: newer id {new['id']}" in older_line

        # Retired the way the description says: the newer text again, with `supersedes`.
        again = client.call("memory_write", {"content": NEW, "supersedes": old["id"]})
        assert again["id"] == new["id"] and again["superseded_ids"] == [old["id"]]
        hits = client.call("memory_search", {"query": "who is Priya's manager"})["results"]
        assert [h["id"] for h in hits] == [new["id"]]


def test_the_python_api_names_the_conflict_in_chinese_too(url: str) -> None:
    with Memory(url=url) as memory:
        old = memory.write("李娜的直属领导是产品总监王强。")
        new = memory.write("从 10 月起李娜的直属领导改成副总裁赵敏。")
        assert [c["id"] for c in new.conflicts or []] == [old.id]
        found = memory.search("李娜的领导是谁")
        assert [h.id for h in found.results][:2] == [new.id, old.id]
        assert "possibly outdated" in found.context

"""A very large tenant in an OpenSearch index of its own (issue 49.2): routing, isolation, moving it.

`REARVIEW_OPENSEARCH_DEDICATED_TENANTS` names the tenants with their own index; the contract suites
run the whole index contract with tenant `t1` dedicated (`opensearch-dedicated-t1`). Here: where the
documents physically are, that a rebuild switches every alias, the `move-tenant` command both ways,
and the setting's errors.
"""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

import pytest
from pydantic import ValidationError

from rearview.cli import main
from rearview.config.settings import Settings
from rearview.errors import ConfigurationError
from rearview.models import MemoryFilter, SearchRequest, WriteRequest
from rearview.ports import IndexDocument, IndexQuery, VersionedIndex
from tests.engines.opensearch_config import local_config
from tests.factories import make_memory, unit_vector

DIMENSION = 32


# -- the setting and the names ----------------------------------------------------------------


@pytest.mark.parametrize("value", ["big,,small", "big,", " , ", "big,big", "big\tco"])
def test_a_bad_dedicated_tenant_list_is_refused_naming_the_setting(value: str) -> None:
    with pytest.raises(ValidationError, match="opensearch_dedicated_tenants"):
        Settings.load(opensearch_dedicated_tenants=value)


def test_the_cli_names_the_environment_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import argparse

    from rearview.cli.parser import _settings

    monkeypatch.setenv("REARVIEW_OPENSEARCH_DEDICATED_TENANTS", "acme,,globex")
    with pytest.raises(ConfigurationError, match="REARVIEW_OPENSEARCH_DEDICATED_TENANTS"):
        _settings(argparse.Namespace(data_dir=tmp_path, config=None))


def test_the_list_is_read_with_spaces_trimmed() -> None:
    assert Settings.load(opensearch_dedicated_tenants=" acme , Globex/EU ").dedicated_tenants == {
        "acme",
        "Globex/EU",
    }
    assert Settings.load().dedicated_tenants == frozenset()


def test_the_setting_needs_the_opensearch_index(tmp_path: Path) -> None:
    from rearview.bootstrap import build_index
    from rearview.embedders.hashing import HashingEmbedder

    settings = Settings.load(data_dir=tmp_path, index="sqlite", opensearch_dedicated_tenants="acme")
    with pytest.raises(ConfigurationError, match="REARVIEW_OPENSEARCH_DEDICATED_TENANTS"):
        build_index(settings, HashingEmbedder(DIMENSION))


def test_a_dedicated_alias_is_a_valid_stable_index_name_per_tenant() -> None:
    from rearview.backends.opensearch.tenant_indexes import dedicated_alias

    odd = dedicated_alias("rearview-memories", "Acme Corp/EU:*?")
    assert odd == dedicated_alias("rearview-memories", "Acme Corp/EU:*?")
    assert odd.startswith("rearview-memories-t-")
    assert odd.removeprefix("rearview-memories-t-").isalnum() and odd.islower()
    assert odd != dedicated_alias("rearview-memories", "acme corp/eu:*?")


# -- on the engine ------------------------------------------------------------------------------


def _config(url: str) -> object:
    return local_config(url, DIMENSION, "rv-ded")


def _docs_in(client: object, index: str, tenant: str) -> set[str]:
    body = {"size": 100, "query": {"term": {"tenant_id": tenant}}, "_source": ["memory_id"]}
    hits = client.search(index=index, body=body)["hits"]["hits"]  # type: ignore[attr-defined]
    return {h["_source"]["memory_id"] for h in hits}


@pytest.mark.opensearch
def test_a_dedicated_tenant_lives_in_its_own_index_and_nowhere_else(opensearch_url: str) -> None:
    from rearview.backends.opensearch.tenant_indexes import TenantRoutedIndex, dedicated_alias

    config = _config(opensearch_url)
    index = TenantRoutedIndex(config, ["Big Co"])  # type: ignore[arg-type]
    alias, own = index.config.alias, dedicated_alias(index.config.alias, "Big Co")
    try:
        index.ensure_schema()
        index.upsert(
            [
                IndexDocument(
                    make_memory("big likes oolong tea", tenant_id="Big Co", memory_id="b1"), unit_vector(1)
                ),
                IndexDocument(
                    make_memory("big drinks tea daily", tenant_id="Big Co", memory_id="b2"), unit_vector(2)
                ),
                IndexDocument(
                    make_memory("small likes green tea", tenant_id="small", memory_id="s1"), unit_vector(3)
                ),
            ]
        )
        assert _docs_in(index.client, own, "Big Co") == {"b1", "b2"}
        assert _docs_in(index.client, alias, "Big Co") == set()
        assert _docs_in(index.client, alias, "small") == {"s1"}
        assert _docs_in(index.client, own, "small") == set()

        def found(tenant: str) -> tuple[set[str], set[str]]:
            hits = index.search(IndexQuery(tenant, MemoryFilter(), 10, text="tea", vector=unit_vector(1)))
            return {i for i, _ in hits.keyword}, {i for i, _ in hits.vector}

        assert found("Big Co") == ({"b1", "b2"}, {"b1", "b2"})
        assert found("small") == ({"s1"}, {"s1"})
        assert index.count("Big Co") == 2 and index.count("small") == 1
        assert [m for m, _ in index.versions("Big Co").items] == ["b1", "b2"]

        index.delete("Big Co", ["b1"])
        index.erase("small", ["s1"])
        assert _docs_in(index.client, own, "Big Co") == {"b2"}
        assert _docs_in(index.client, alias, "small") == set()

        # A rebuild fills and switches every alias (`rearview reindex`, which takes a VersionedIndex).
        assert isinstance(index, VersionedIndex)
        assert index.current_version() == 1
        index.create_version(2)
        index.upsert_into(
            2,
            [
                IndexDocument(
                    make_memory("big drinks tea daily", tenant_id="Big Co", memory_id="b2"), unit_vector(2)
                )
            ],
        )
        index.switch_alias(2)
        assert index.current_version() == 2
        assert index.for_tenant("Big Co").current_version() == 2
        assert index.shared.current_version() == 2
        assert found("Big Co") == ({"b2"}, {"b2"})
    finally:
        index.client.indices.delete(index=f"{alias}-*", ignore=[404])


@pytest.fixture
def aws_shape(opensearch_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Environment for the CLI and `Settings`: the embedded store, the OpenSearch index; returns the alias."""
    alias = f"rv-move-{uuid4().hex[:10]}"
    for name, value in {
        "REARVIEW_DATA_DIR": str(tmp_path),
        "REARVIEW_EMBEDDER": "hashing",
        "REARVIEW_INDEX": "opensearch",
        "REARVIEW_OPENSEARCH_ENDPOINT": opensearch_url,
        "REARVIEW_OPENSEARCH_MODE": "local",
        "REARVIEW_OPENSEARCH_ENGINE": "lucene",
        "REARVIEW_OPENSEARCH_INDEX": alias,
        "REARVIEW_OPENSEARCH_REFRESH": "true",
        "REARVIEW_OPENSEARCH_TIMEOUT_S": "15",
    }.items():
        monkeypatch.setenv(name, value)
    yield alias
    from opensearchpy import OpenSearch

    OpenSearch(hosts=[opensearch_url]).indices.delete(index=f"{alias}-*", ignore=[404])


def _service() -> object:
    from rearview.bootstrap import build_service

    return build_service(Settings.load())


def _found(tenant: str, query: str) -> list[str]:
    service = _service()
    hits = service.search(tenant, SearchRequest(query=query, reinforce=False)).results  # type: ignore[attr-defined]
    return sorted(h.content for h in hits)


@pytest.mark.opensearch
def test_move_tenant_there_and_back_keeps_every_memory(
    aws_shape: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from opensearchpy import OpenSearch

    from rearview.backends.opensearch.tenant_indexes import dedicated_alias

    client = OpenSearch(hosts=[Settings.load().opensearch_endpoint or ""])
    own = dedicated_alias(aws_shape, "big")
    service = _service()
    # Delete markers outrank copies for `index.gc_deletes` (60 s by default): an hour here, so that
    # the copy back below meets them however slow the host.
    client.indices.put_settings(index=aws_shape, body={"index": {"gc_deletes": "1h"}})
    for word in ("kiwi", "mango", "papaya"):
        service.write("big", WriteRequest(content=f"big grows {word} fruit"))  # type: ignore[attr-defined]
    service.write("small", WriteRequest(content="small grows lime fruit"))  # type: ignore[attr-defined]
    everything = ["big grows kiwi fruit", "big grows mango fruit", "big grows papaya fruit"]

    # 1. copy, while the setting still routes `big` to the shared index
    assert main(["move-tenant", "big", "--to", "own"]) == 0
    assert "3 documents copied" in capsys.readouterr().out
    assert len(_docs_in(client, own, "big")) == 3
    assert main(["move-tenant", "big", "--to", "own"]) == 0  # a second copy rewrites the same versions
    assert "3 documents copied" in capsys.readouterr().out
    assert len(_docs_in(client, own, "big")) == 3
    # a write between the copy and the switch lands in the shared index only
    _service().write("big", WriteRequest(content="big grows guava fruit"))  # type: ignore[attr-defined]
    assert len(_docs_in(client, own, "big")) == 3

    # 2. the operator switches the setting: `big` is searched in its own index
    monkeypatch.setenv("REARVIEW_OPENSEARCH_DEDICATED_TENANTS", "big")
    # 3. finish: reconcile brings the window's write over, then the shared copies go
    assert main(["move-tenant", "big", "--to", "own"]) == 0
    assert "4 documents removed from" in capsys.readouterr().out
    assert len(_docs_in(client, own, "big")) == 4
    assert _docs_in(client, aws_shape, "big") == set()
    assert _found("big", "fruit") == sorted([*everything, "big grows guava fruit"])
    assert _found("small", "fruit") == ["small grows lime fruit"]

    # and back: copy while it is still dedicated, switch the setting off, finish. The shared index
    # removed big's documents within `gc_deletes`: their delete markers outrank a copy.
    assert main(["move-tenant", "big", "--to", "shared"]) == 1
    assert "run the command again in a minute" in capsys.readouterr().err
    client.indices.put_settings(index=aws_shape, body={"index": {"gc_deletes": "0s"}})
    client.indices.refresh(index=aws_shape)  # a refresh prunes the markers older than gc_deletes
    assert main(["move-tenant", "big", "--to", "shared"]) == 0
    assert "4 documents copied" in capsys.readouterr().out
    monkeypatch.delenv("REARVIEW_OPENSEARCH_DEDICATED_TENANTS")
    assert main(["move-tenant", "big", "--to", "shared"]) == 0
    assert not client.indices.exists(index=f"{own}-v1")
    assert len(_docs_in(client, aws_shape, "big")) == 4
    assert _found("big", "fruit") == sorted([*everything, "big grows guava fruit"])
    assert _found("small", "fruit") == ["small grows lime fruit"]


def test_move_tenant_needs_the_opensearch_index(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")
    assert main(["--data-dir", str(tmp_path), "move-tenant", "big", "--to", "own"]) == 2
    assert "REARVIEW_INDEX" in capsys.readouterr().err

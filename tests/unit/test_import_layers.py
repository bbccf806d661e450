"""The package's import graph: no circle, and no import from a lower layer to a higher one.

Every `import`/`from ... import` in `functions/` counts, also those inside functions and under
`TYPE_CHECKING`: a type-only circle is still a circle a reader has to hold in their head.
Importing `a.b.c` also imports the packages `a` and `a.b` (their `__init__` runs), so those edges
count too, except to a package that contains the importer (it is already being imported).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "functions"

# The layers, lowest first. A module may import its own layer and the ones below, never above.
# Matching is by the longest prefix listed.
LAYERS: dict[str, int] = {
    "rearview": 0,  # the domain contract: models, ports, errors, limits
    "rearview.shared": 0,  # small helpers: clock, ids, lazy, retry, principal, scopes, ...
    "rearview.text": 0,  # tokens, FTS5 terms, BM25
    "rearview.backends": 1,
    "rearview.embedders": 1,
    "rearview.service": 2,
    "rearview.importers": 3,  # `rearview import --from`: other systems' exports through the write path
    "rearview.config": 3,  # Settings: read by the composition root and everything above it
    "rearview.api": 4,
    "rearview.ui": 4,
    "rearview.testing": 4,
    "rearview.bootstrap": 5,
    "rearview.cli": 6,
    "rearview.client": 6,  # the Python API (`from rearview import Memory`): embedded service or MCP client
    "rearview.integrations": 7,  # framework adapters (LangGraph, Strands) on the Python API
    "handlers": 8,
}

# Inside the service: which capability may import which (the `__init__` docstrings say why).
FORBIDDEN_INSIDE_SERVICE: dict[str, tuple[str, ...]] = {
    "rearview.service.search": (
        "rearview.service.write",
        "rearview.service.ingest",
        "rearview.service.lifecycle",
        "rearview.service.memory_service",
    ),
    "rearview.service.write": (
        "rearview.service.search",
        "rearview.service.ingest",
        "rearview.service.lifecycle",
        "rearview.service.memory_service",
    ),
    "rearview.service.ingest": (
        "rearview.service.search",
        "rearview.service.lifecycle",
        "rearview.service.memory_service",
    ),
    "rearview.service.lifecycle": (
        "rearview.service.write",
        "rearview.service.search",
        "rearview.service.ingest",
        "rearview.service.memory_service",
    ),
}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and parts[0] in ("rearview", "handlers"):
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                yield name if name in MODULES else node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name


def _edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        targets: set[str] = set()
        for name in _imported(path):
            parts = name.split(".")
            for n in range(1, len(parts) + 1):
                target = ".".join(parts[:n])
                is_ancestor = module == target or module.startswith(target + ".")
                if target in MODULES and target != module and (n == len(parts) or not is_ancestor):
                    targets.add(target)
        graph[module] = targets
    return graph


GRAPH = _edges()


def _layer(module: str) -> int:
    prefix = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[prefix]


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (each sorted)."""
    reach = {node: _reachable(graph, node) for node in graph}
    groups = {
        tuple(sorted({node} | {other for other in reach[node] if node in reach.get(other, set())}))
        for node in graph
        if node in reach[node]
    }
    return sorted(list(group) for group in groups)


def test_the_graph_is_read() -> None:
    assert "rearview.service.memory_service" in MODULES
    assert "rearview.service.write.writer" in GRAPH["rearview.service.memory_service"]


def test_no_import_circle() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(target) > _layer(module)
        # The one composition point: the MCP app mounts the memory browser (`api.app` -> `ui.app`).
        and not (module == "rearview.api.app" and target.startswith("rearview.ui"))
        # The one public facade: the package resolves `Memory` lazily (PEP 562) from the Python API.
        and not (module == "rearview" and target == "rearview.client")
    ]
    assert upward == []


@pytest.mark.parametrize("capability", sorted(FORBIDDEN_INSIDE_SERVICE))
def test_service_capabilities_import_only_what_their_init_allows(capability: str) -> None:
    forbidden = FORBIDDEN_INSIDE_SERVICE[capability]
    crossing = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if module.startswith(capability)
        for target in targets
        if any(target == f or target.startswith(f + ".") for f in forbidden)
    ]
    assert crossing == []


def test_integrations_depend_only_on_the_client_and_the_models() -> None:
    """An adapter is built on `Memory` and plain data: never on the service, a backend or the API."""
    allowed_layer = 0  # models, errors, limits: what `Memory` takes and answers
    beyond = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if module.startswith("rearview.integrations")
        for target in targets
        if not target.startswith(("rearview.client", "rearview.integrations"))
        and _layer(target) > allowed_layer
    ]
    assert beyond == []
    assert not any(
        target.startswith("rearview.integrations")
        for module, targets in GRAPH.items()
        if not module.startswith("rearview.integrations")
        for target in targets
    )

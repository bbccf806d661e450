"""benchmarks/README.md is an index: every script of every group, one row each, and nothing that is gone.

What the scripts measured lives in benchmarks/findings/<group>.md (newest first), which the index
links; the Makefile's bench targets run scripts that exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
GROUPS = ("recall", "speed", "cost", "fairness", "scale", "common")
INDEX_LINES = 150


def _index() -> str:
    return (BENCH / "README.md").read_text(encoding="utf-8")


def _section(group: str) -> str:
    text = _index()
    start = text.index(f"## `{group}/`")
    following = text.find("\n## ", start + 1)
    return text[start : following if following != -1 else len(text)]


def test_the_index_is_short() -> None:
    assert len(_index().splitlines()) <= INDEX_LINES, "results belong in benchmarks/findings/, not the index"


def test_every_script_has_one_row_in_its_group() -> None:
    for group in GROUPS:
        rows = re.findall(r"^\| `([a-z_0-9]+\.py)` \|", _section(group), re.M)
        scripts = sorted(p.name for p in (BENCH / group).glob("*.py") if p.name != "__init__.py")
        assert sorted(rows) == scripts, f"benchmarks/{group}/: the index lists {sorted(rows)}"


def test_each_group_has_its_findings_linked() -> None:
    for group in GROUPS[:-1]:
        findings = BENCH / "findings" / f"{group}.md"
        assert findings.is_file(), findings
        assert f"(findings/{group}.md)" in _index()
        assert findings.read_text(encoding="utf-8").startswith(f"# {group.capitalize()} findings\n")


def test_the_makefile_runs_scripts_that_exist() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    runs = re.findall(r"\$\(BENCH\)/([a-z_]+/[a-z_0-9]+\.py)", makefile)
    assert runs, "the Makefile's bench targets run no script"
    for script in runs:
        assert (BENCH / script).is_file(), f"the Makefile runs benchmarks/{script}, which does not exist"

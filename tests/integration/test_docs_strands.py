"""docs/integrations.md's Strands section: an install that leaves only the mcp conflict, and an agent given a model.

Strands is installed with `--no-deps` (it pins mcp<2.2), so the page lists its other requirements:
each must carry the bounds strands-agents declares, or pip picks versions it rejects (`pip check`
then reports them). And Strands' `Agent()` defaults to Bedrock, which fails without AWS credentials:
the example passes `model=`.
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def _strands_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text[text.index("## Strands Agents") :]


def _page_requirements() -> dict[str, Requirement]:
    """The requirements of the `pip install` command after the `--no-deps` one, by canonical name."""
    bash = re.search(r"```bash\n(.*?)```", _strands_section(), re.S)
    assert bash is not None, "the Strands section shows no install commands"
    commands = bash[1].replace("\\\n", " ").splitlines()
    at = next(i for i, line in enumerate(commands) if "--no-deps" in line)
    words = shlex.split(commands[at + 1])
    assert words[:2] == ["pip", "install"], commands[at + 1]
    return {canonicalize_name(r.name): r for r in map(Requirement, words[2:])}


def test_the_install_gives_each_requirement_strands_declares_with_its_bounds() -> None:
    try:
        declared = importlib.metadata.requires("strands-agents") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("strands-agents is not installed (`make strands`)")
    shown = _page_requirements()
    for text in declared:
        wanted = Requirement(text)
        if wanted.marker is not None or canonicalize_name(wanted.name) == "mcp":
            continue  # an extra's requirement, or the one the page says conflicts
        got = shown.get(canonicalize_name(wanted.name))
        assert got is not None, f"the page's install leaves out {wanted} (pip check: not installed)"
        assert got.specifier == wanted.specifier, f"the page installs {got}, Strands declares {wanted}"


def test_the_page_names_the_one_conflict_pip_check_reports() -> None:
    section = _strands_section()
    assert "strands-agents 1.62.0 has requirement mcp<2.2,>=1.23.0, but you have mcp 2.3.0." in section
    assert "exactly one conflict" in section


def test_every_agent_of_the_example_is_given_a_model() -> None:
    section = _strands_section()
    assert "NoCredentialsError" in section and "BedrockModel" in section
    python = "\n".join(re.findall(r"```python\n(.*?)```", section, re.S))
    agents = re.findall(r"\bAgent\((.*?)\)\n", python, re.S)
    assert agents, "the example builds no Agent"
    for arguments in agents:
        assert "model=" in arguments, f"Agent({arguments.strip()[:60]}...) would use Bedrock"

"""The installable name, and the command that adds an extra to this installation as it was made.

The import package and the command are `rearview`; the distribution is `rearview-memory`, because
`rearview` on PyPI is someone else's placeholder: a hint naming it would install a stranger's code.
Rearview is installed from a clone (`pip install -e .`) or from its wheel, so a hint must say where
from: `install_command` reads the installation's PEP 610 record (`direct_url.json`) and answers the
command that works for it, pipx's when it lives in a pipx environment.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DISTRIBUTION = "rearview-memory"
SOURCE_ROOT = Path(__file__).resolve().parents[3]
"""The clone's root when running from one (it holds pyproject.toml)."""


def version() -> str:
    """The installed version, or "(not installed)" for a source tree that was never installed."""
    from importlib.metadata import PackageNotFoundError, distribution  # at use: it costs a cold start

    try:
        return distribution(DISTRIBUTION).version
    except PackageNotFoundError:
        return "(not installed)"


def install_command(extra: str) -> str:
    """A shell command that installs this Rearview again with `extra` (e.g. "local", "aws").

    From a clone: `pip install -e '<clone>[extra]'`; from a wheel: `pip install
    'rearview-memory[extra] @ file:///…whl'` (the form pipx keeps the extra with); in a pipx
    environment the same requirement with `pipx install --force`. Otherwise the name on an index.
    """
    requirement = _requirement(extra)
    if "/pipx/venvs/" in sys.prefix.replace("\\", "/"):
        return f"pipx install --force {requirement}"
    return f"pip install {requirement}"


def _requirement(extra: str) -> str:
    """What pip is given: the clone this code runs from, the wheel it came from, or the name."""
    from importlib.metadata import PackageNotFoundError, distribution
    from urllib.parse import unquote, urlparse

    if (SOURCE_ROOT / "pyproject.toml").is_file():  # this code runs from a clone, however installed
        return f"-e '{SOURCE_ROOT}[{extra}]'"
    try:
        record = distribution(DISTRIBUTION).read_text("direct_url.json")
    except PackageNotFoundError:
        record = None
    facts = json.loads(record) if record else {}
    url = str(facts.get("url", ""))
    if not url.startswith("file://"):
        return f"'{DISTRIBUTION}[{extra}]'"
    path = unquote(urlparse(url).path)
    if path.endswith(".whl"):
        return f"'{DISTRIBUTION}[{extra}] @ {url}'"
    editable = "-e " if facts.get("dir_info", {}).get("editable") else ""
    return f"{editable}'{path}[{extra}]'"

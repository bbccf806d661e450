"""The documentation: `mkdocs build --strict` of docs/ (what `make docs` runs), and the README's links into it.

Strict mode turns MkDocs' warnings into a failed build: a link to a page or a heading that does not
exist, a link out of docs/ (the site has no copy of the file), a page left out of the nav.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from html import escape
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="mkdocs is not installed (the dev extra has it)")

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")
HREF = re.compile(r'<a [^>]*href="([^"]+)"')


def _text(page: str) -> str:
    """A page's HTML without its tags (what a reader sees, entities kept)."""
    return re.sub(r"<[^>]+>", "", page)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def _built(site: Path, page: str) -> Path:
    """Where the page `page` (a docs/ file name, without `.md`) is built: a file, `use_directory_urls: false`."""
    return site / f"{page}.html"


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    for page in DOCS.glob("*.md"):
        assert _built(site, page.stem).is_file(), f"{page.name} was not built"


def test_links_between_pages_name_files_not_folders(site: Path) -> None:
    """Opened from disk, a link to a folder shows a directory listing: every local link names a file."""
    for html in site.glob("*.html"):
        if html.name == "404.html":
            continue  # a server's answer to any path: its links are absolute on purpose
        for href in HREF.findall(html.read_text(encoding="utf-8")):
            if href.startswith(("http://", "https://", "mailto:", "#")):
                continue
            path = href.split("#")[0].split("?")[0]
            assert path and (site / path).is_file(), f"{html.name} links to {href}, which is not a file"


def test_search_has_its_index_as_a_script(site: Path) -> None:
    """A file:// page can load a script but not fetch JSON: the index is also a script, with the same documents."""
    script = (site / "search" / "search_index.js").read_text(encoding="utf-8")
    prefix = "window.REARVIEW_SEARCH_INDEX = "
    assert script.startswith(prefix) and script.rstrip().endswith(";")
    embedded = json.loads(script.rstrip()[len(prefix) : -1])
    assert embedded == json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert "<" not in script  # inside a <script>, `</script>` in a page's text would end it


def test_the_python_api_page_documents_every_public_method(site: Path) -> None:
    from rearview import Memory

    page = (site / "python-api.html").read_text(encoding="utf-8")
    public = [name for name, member in vars(Memory).items() if callable(member) and not name.startswith("_")]
    assert len(public) >= 10, public
    for name in public:
        first_line = inspect.getdoc(getattr(Memory, name)).splitlines()[0]
        assert f'id="{name}"' in page, f"Memory.{name} has no section on the Python API page"
        assert escape(first_line.replace("`", ""), quote=False) in _text(page), f"Memory.{name}'s docstring"
        for param in list(inspect.signature(getattr(Memory, name)).parameters)[1:]:  # not `self`
            assert param in page, f"Memory.{name}({param}) is missing from its signature"


def test_the_site_loads_nothing_from_elsewhere(site: Path) -> None:
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        remote = re.search(r'<(script|link)[^>]+(src|href)="https?://', text)
        assert remote is None, f"{html} loads a remote asset"


def test_every_page_says_first_what_it_is_for() -> None:
    for page in DOCS.glob("*.md"):
        lines = page.read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("# "), f"{page.name} starts without a title"
        first = next(line for line in lines[1:] if line.strip())
        assert first.startswith("This "), f"{page.name}: the first sentence should say what the page is for"


def test_the_readme_links_to_pages_and_headings_that_exist(site: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(readme) if not t.startswith(("http://", "https://", "mailto:"))]
    assert any(t.startswith("docs/") for t in targets), "the README should point into docs/"
    for target in targets:
        path, _, anchor = target.partition("#")
        assert (ROOT / path).exists(), f"README links to {target}, which does not exist"
        if anchor and path.startswith("docs/") and path.endswith(".md"):
            html = _built(site, Path(path).stem).read_text(encoding="utf-8")
            assert f'id="{anchor}"' in html, f"README links to {target}: no such heading"


def test_the_readme_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        if page.stem != "index":
            assert f"docs/{page.name}" in readme, f"the README's 'Where to go next' misses docs/{page.name}"

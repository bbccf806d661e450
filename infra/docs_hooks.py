"""MkDocs hooks (mkdocs.yml `hooks:`): the generated Python API page, and search that works from disk.

- `python-api.md` is written at build time from the source of `rearview.Memory` and `rearview.errors`
  (read with `ast`, nothing imported): each public method's signature and docstring, so the page
  cannot drift from the code. `python infra/docs_hooks.py` prints it.
- Search: MkDocs' search plugin writes `search/search_index.json`, which its script fetches from a
  web worker; a page opened from disk (file://) may do neither. This hook also writes the index as
  `search/search_index.js` (one `<script>` assignment), which the theme override's
  `infra/docs_theme/search/main.js` loads with a script tag and searches with lunr in the page.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "functions" / "rearview"
MEMORY_SOURCE = PACKAGE / "client" / "memory.py"
ERRORS_SOURCE = PACKAGE / "errors.py"
API_PAGE = "python-api.md"
SEARCH_SCRIPT_GLOBAL = "REARVIEW_SEARCH_INDEX"
WIDTH = 88  # a signature longer than this is written one parameter per line

INTRO = """# The Python API

This page is the reference of `rearview.Memory`, generated from its docstrings when the site is
built (`infra/docs_hooks.py`), so it says what the code in this checkout does. The
[home page](index.md) and [Agent frameworks](integrations.md) show it in use.

`from rearview import Memory`. One `Memory` is either an embedded store in this process
(`Memory()`, `Memory(data_dir=...)`) or a client of a running server (`Memory(url=..., api_key=...)`);
both take the same arguments and answer with the same models. A bad argument raises
`InvalidInputError` naming the field before anything is written or sent.

The models a method returns are pydantic models: `WriteReceipt`, `Recall` and `SummaryReceipt`
(`rearview.client.results`), the others (`MemoryView`, `Stats`, `ForgetResult`, …) from
`rearview.models`; their fields are the MCP tools' output fields ([configuration](configuration.md)
lists the limits on every argument).
"""


# ---------------------------------------------------------------------------------------- API page


def _param(arg: ast.arg, default: ast.expr | None) -> str:
    text = arg.arg
    if arg.annotation is not None:
        text += f": {ast.unparse(arg.annotation)}"
    if default is not None:
        text += f" = {ast.unparse(default)}" if arg.annotation is not None else f"={ast.unparse(default)}"
    return text


def _params(args: ast.arguments) -> list[str]:
    """The parameters as written, but `self`; `*` and `/` markers kept."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = [_param(a, d) for a, d in zip(positional, defaults, strict=True)]
    if args.posonlyargs:
        out.insert(len(args.posonlyargs), "/")
    if args.vararg is not None:
        out.append("*" + _param(args.vararg, None))
    elif args.kwonlyargs:
        out.append("*")
    out += [_param(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg is not None:
        out.append("**" + _param(args.kwarg, None))
    return [p for p in out if p not in ("self", "cls")]


def signature(name: str, fn: ast.FunctionDef) -> str:
    """`name(params) -> returns`, on one line if it fits in WIDTH, else one parameter per line."""
    params = _params(fn.args)
    returns = f" -> {ast.unparse(fn.returns)}" if fn.returns is not None and name != "Memory" else ""
    one_line = f"{name}({', '.join(params)}){returns}"
    if len(one_line) <= WIDTH or not params:
        return one_line
    return f"{name}(\n" + "".join(f"    {p},\n" for p in params) + f"){returns}"


def docstring_markdown(doc: str) -> str:
    """A docstring as Markdown: a reST literal block (a line ending in `::`, an indented block) fenced."""
    out: list[str] = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            out.append(line.rstrip()[:-1])  # "Example::" reads "Example:"
            i += 1
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                block.append(lines[i][4:])
                i += 1
            while block and not block[0].strip():
                block.pop(0)
            while block and not block[-1].strip():
                block.pop()
            out += ["", "```python", *block, "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out).strip()


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    found = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if found is None:
        raise LookupError(f"no class {name} in the source")
    return found


def _aliases(tree: ast.Module, signatures: str) -> list[str]:
    """The module's type aliases (`When = datetime | str | None`) a signature uses, with their docstrings."""
    lines: list[str] = []
    for i, node in enumerate(tree.body):
        if not (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            continue
        name = node.targets[0].id
        if not name[:1].isupper() or not re.search(rf"\b{name}\b", signatures):
            continue
        after = tree.body[i + 1] if i + 1 < len(tree.body) else None
        doc = ""
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            doc = ": " + " ".join(after.value.value.split())
        lines.append(f"- `{name}` is `{ast.unparse(node.value)}`{doc}")
    return lines


def memory_section(source: str) -> str:
    """`Memory`'s constructor and public methods, in source order; the type aliases their signatures use."""
    tree = ast.parse(source)
    cls = _class(tree, "Memory")
    parts = ["## `Memory`", "", docstring_markdown(ast.get_docstring(cls) or ""), ""]
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        if node.name == "__init__":
            parts += ["### Constructor", "", "```python", signature("Memory", node), "```", ""]
            continue
        if node.name.startswith("_") or any(
            isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list
        ):
            continue
        doc = ast.get_docstring(node)
        if not doc:
            raise LookupError(f"Memory.{node.name} has no docstring: the API page would say nothing of it")
        parts += [f"### `{node.name}`", "", "```python", signature(node.name, node), "```", ""]
        parts += [docstring_markdown(doc), ""]
    parts += ["`Memory` is also a context manager: leaving the `with` block calls `close()`.", ""]
    aliases = _aliases(tree, "\n".join(parts))
    if aliases:
        parts += ["### Types in these signatures", "", *aliases, ""]
    return "\n".join(parts)


def errors_section(source: str) -> str:
    """The error hierarchy (`rearview.errors`): each class, its base, and its docstring's first paragraph."""
    rows = [
        "## Errors",
        "",
        "Every error Rearview raises on purpose is a `rearview.errors.RearviewError`:",
        "",
    ]
    rows += ["| Error | Is a | When |", "|---|---|---|"]
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            base = ", ".join(ast.unparse(b) for b in node.bases)
            first = (ast.get_docstring(node) or "").split("\n\n")[0].replace("\n", " ").replace("|", "\\|")
            rows.append(f"| `{node.name}` | `{base}` | {first} |")
    return "\n".join(rows) + "\n"


def api_page(memory_source: str | None = None, errors_source: str | None = None) -> str:
    """The whole `python-api.md` page (from the checkout's source unless sources are given)."""
    memory = memory_source if memory_source is not None else MEMORY_SOURCE.read_text(encoding="utf-8")
    errors = errors_source if errors_source is not None else ERRORS_SOURCE.read_text(encoding="utf-8")
    return f"{INTRO}\n{memory_section(memory)}\n{errors_section(errors)}"


# ---------------------------------------------------------------------------------------- offline search


def search_index_script(index_json: str) -> str:
    """The search index as a script: one global assignment (safe inside <script>: `<` escaped)."""
    data = json.loads(index_json)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f"window.{SEARCH_SCRIPT_GLOBAL} = {text};\n"


# ---------------------------------------------------------------------------------------- hooks


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated API page to the build (it has no file in docs/)."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, API_PAGE, content=api_page()))
    return files


def on_post_build(config: MkDocsConfig) -> None:
    """After the search plugin wrote search_index.json, write it again as a script a file:// page can load."""
    search_dir = Path(config["site_dir"]) / "search"
    index = search_dir / "search_index.json"
    if index.is_file():
        (search_dir / "search_index.js").write_text(
            search_index_script(index.read_text(encoding="utf-8")), encoding="utf-8"
        )


if __name__ == "__main__":
    print(api_page(), end="")

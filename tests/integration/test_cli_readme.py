"""Every `rearview …` command the README and the docs pages show works as written (embedded backend, hashing embedder).

Placeholders are filled in by the option they follow (`[--port P]` -> `--port 8080`), an optional
group `[a | b]` takes its first form, and `decay|archive|reconcile` is each of the three.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rearview.cli import main
from rearview.cli.parser import build_parser

ROOT = Path(__file__).parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
"""Where the commands are shown: the README, then every page of the documentation site."""
SNIPPET = re.compile(r"`(rearview [^`]+)`")
REQUIRED = {
    "serve",
    "import",
    "search",
    "stats",
    "reindex",
    "decay",
    "archive",
    "reconcile",
    "cues",
    "export",
    "ingest",
}
"""Commands the README and the docs pages, together, must show."""


def _commands(values: dict[str, str], positional: str) -> list[list[str]]:
    """The documents' commands as argv lists (without the leading `rearview`), in document order.

    A FILE is `positional`, but for `ingest`, which reads a conversation (`conversation.jsonl`
    beside it): a file of memories is refused there, naming `import`.
    """
    found: list[list[str]] = []
    shown = "\n".join(document.read_text(encoding="utf-8") for document in DOCUMENTS)
    for snippet in SNIPPET.findall(shown):
        text = re.sub(r"\[([^\]]*)\]", lambda group: group[1].split(" | ")[0], snippet)
        tokens = shlex.split(text)[1:]
        filled = [
            (values[tokens[i - 1]] if i and tokens[i - 1].startswith("--") else positional)
            if re.fullmatch(r"[A-Z]+", token)
            else token
            for i, token in enumerate(tokens)
        ]
        for name in filled[0].split("|"):
            conversation = str(Path(positional).with_name("conversation.jsonl"))
            found.append(
                [name, *(conversation if t == positional and name == "ingest" else t for t in filled[1:])]
            )
    return found


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")
    monkeypatch.setenv("REARVIEW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "memories.jsonl").write_text('{"content": "This query needs the orders index"}\n')
    (tmp_path / "conversation.jsonl").write_text('{"speaker": "Ann", "content": "I prefer green tea"}\n')
    (tmp_path / "config.toml").write_text('[api_keys]\n"sk-test" = "alice"\n')
    return tmp_path


def _values(workdir: Path) -> dict[str, str]:
    return {
        "--host": "127.0.0.1",
        "--port": "8080",
        "--config": str(workdir / "config.toml"),
        "--data-dir": str(workdir / "data"),
        "--tenant": "local",
        "--output": str(workdir / "export.jsonl"),
        "--budget-s": "60",
        "--agent": "default",
    }


def test_the_readme_shows_every_command_and_each_parses(workdir: Path) -> None:
    values = _values(workdir)
    commands = _commands(values, str(workdir / "memories.jsonl"))
    assert {argv[0] for argv in commands} >= REQUIRED
    for argv in commands:
        args = build_parser().parse_args(argv)
        if argv[0] == "serve" and "--data-dir" in argv:  # the full serve line (docs/local-server.md)
            assert (args.host, args.port) == ("127.0.0.1", 8080)
            assert (args.config, args.data_dir) == (Path(values["--config"]), Path(values["--data-dir"]))


def test_the_readme_commands_run(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commands = [c for c in _commands(_values(workdir), "memories.jsonl") if c[0] != "serve"]
    for argv in sorted(commands, key=lambda c: c[0] != "import"):  # data first, then the rest
        assert main(argv) == 0, argv
    out = capsys.readouterr().out
    assert "imported into tenant 'local': created 1\n" in out
    assert "This query needs the orders index" in out  # `rearview search "query"` found it

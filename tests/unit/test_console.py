"""What the CLI prints: words for counts, escapes for what would drive a terminal, bars only on a TTY."""

from __future__ import annotations

import io

import pytest

from rearview.cli import console


def test_plural_and_counts_read_as_words() -> None:
    assert [console.plural(n, "fact") for n in (0, 1, 2)] == ["0 facts", "1 fact", "2 facts"]
    assert console.plural(1, "memory", "memories") == "1 memory"
    assert console.plural(3, "memory", "memories") == "3 memories"
    assert console.counts({"created": 2, "merged": 0, "superseded": 1}) == "created 2, superseded 1"
    assert console.counts({"created": 0}) == "nothing"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("bell\x07 esc\x1b[31mred nul\x00", "bell\\x07 esc\\x1b[31mred nul\\x00"),
        ("two\nlines\ttab\rcr", "two\\nlines\\ttab\\x0dcr"),
        ("rtl \u202eexe.txt\u202c zw\u200bsp bom\ufeff", "rtl \\u202eexe.txt\\u202c zw\\u200bsp bom\\ufeff"),
        ("tag \U000e0041\U000e0042", "tag \\U000e0041\\U000e0042"),
        ("c1 \x9b csi", "c1 \\x9b csi"),
        ("用户喜欢喝绿茶 — café", "用户喜欢喝绿茶 — café"),
    ],
)
def test_printable_escapes_every_control_and_invisible_format_character(text: str, shown: str) -> None:
    assert console.printable(text) == shown


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_a_bar_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    with console.progress(10, "line", "import") as advance:
        advance(10)
    assert log.getvalue() == ""

    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with console.progress(10, "line", "import") as advance:
        advance(10)
    assert "import: 100%" in terminal.getvalue()

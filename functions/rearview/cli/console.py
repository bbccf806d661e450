"""What the CLI prints for a person: counts in words, text safe for a terminal, progress only on a TTY."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

# C0 and C1 controls, DEL, and the format characters that reorder or hide text on screen (bidi
# embeddings, overrides and isolates; zero-width characters; the BOM; Unicode TAG characters).
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f]"
)


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`1 fact`, `2 facts`, `0 facts` (`plural_form` for irregular nouns: `1 memory`, `2 memories`)."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"


def counts(tally: Mapping[str, int], empty: str = "nothing") -> str:
    """`created 2, merged 1` from `{'created': 2, 'merged': 1}` (zeros left out); `empty` when all are."""
    parts = [f"{name} {count}" for name, count in tally.items() if count]
    return ", ".join(parts) or empty


def printable(text: str) -> str:
    r"""`text` with every control or invisible format character shown as an escape (`\x1b`, `\u202e`).

    Memory content is data from anyone who could write: printed raw, an ESC sequence would drive
    the reader's terminal (colours, titles, cursor moves) and a bidi override would reorder the line.
    Tab and newline are escaped too, so one memory stays on one line.
    """
    return _UNPRINTABLE.sub(_escape, text.replace("\t", "\\t").replace("\n", "\\n"))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@contextmanager
def progress(total: int | None, unit: str, desc: str) -> Iterator[Callable[[int], None]]:
    """An `update(n)` callable: a tqdm bar on an interactive stderr, nothing otherwise.

    A bar redrawn with carriage returns is noise in a log file or a CI transcript.
    """
    if not sys.stderr.isatty():
        yield lambda _n: None
        return
    from tqdm import tqdm

    with tqdm(total=total, unit=unit, unit_scale=unit == "B", desc=desc) as bar:

        def update(n: int) -> None:
            bar.update(n)

        yield update

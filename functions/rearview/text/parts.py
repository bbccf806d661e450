"""A long memory's parts: its sentences, which the index embeds beside the whole (`content_parts`).

One vector per memory averages everything the memory says. A conversation turn that asks about
yoga studios and mentions, in passing, "I've been doing yoga twice a week" is far from a question
about how often the user does yoga, though one of its sentences answers it. So the index keeps a
long memory's sentences' vectors beside its content's, and a memory's cosine is the best of them
(`ports.IndexDocument.part_vectors`). Measured on LongMemEval's 50 development questions, plain
cosine's turn recall_all@10 rises from .70 to .82 and its recall_all@50 from .82 to .90 with the
best of a turn and its sentences (`long_history_recall.py`, benchmarks/findings/recall.md).

Parts are derived from the content alone (the same content, the same parts) and never stored in the
memory, shown or exported: they exist only as vectors in the index, rebuilt with the content's.
Standard library only.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_PARTS", "PART_MAX_CHARS", "PART_MIN_CHARS", "content_parts"]

PART_MIN_CHARS: Final = 200
"""Content shorter than this (about two sentences) is one part, itself: its vector is already close to
each of its sentences, and a write of it pays for one embedding, not three."""
PART_MAX_CHARS: Final = 1000
"""Content longer than this (a long reply, a document) has no parts: its sentences are mostly general
("Here are a few options..."), and as parts they match questions about anything, while the facts a
question asks about are said in a statement or a turn. On LongMemEval's development questions, plain
cosine's recall_all@10 with the best of each turn and its parts is .82 with the parts of turns up to
1,000 characters (`long_history_recall.py`; .70 without parts), and was .74 with every turn's parts
(the same scoring, run before this cap: benchmarks/findings/recall.md).
It also spares the writes that cost most to embed a second time."""
MAX_PARTS: Final = 8
"""The most parts a memory has: past this, consecutive sentences are grouped into this many runs, so a
memory costs the index at most eight vectors more and its write about one more embedding of its text."""
_SHORT: Final = 20
"""A sentence shorter than this ("Thanks!", "Sure.") joins the next one: alone it matches anything."""

_LABEL = re.compile(r"^[^\s:]{1,24}(?: [^\s:]{1,24})?: ")
"""A leading speaker label ("user: ", "Caroline: "): the whole's vector has it; a part is what was said."""
_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\"'“‘(\[A-Z0-9])|(?<=[。！？])|\n")
"""Where a sentence ends: .!? before a capital, digit or opening quote; a CJK full stop; a line break.
(No optional whitespace around the line break: at each place in a run of spaces it would scan the
run again, quadratic in its length; the pieces are stripped instead. tests/security/test_linear_time.py.)"""


def content_parts(content: str) -> list[str]:
    """The parts the index embeds beside `content`: none for short content, a document or one sentence.

    Sentences in order (after a leading speaker label), a short one joined to the next; more than
    `MAX_PARTS` are grouped into `MAX_PARTS` runs of consecutive sentences. Pure and deterministic.
    """
    if not PART_MIN_CHARS <= len(content) <= PART_MAX_CHARS:
        return []
    body = _LABEL.sub("", content, count=1)
    sentences: list[str] = []
    pending = ""
    for piece in _BREAK.split(body):
        text = f"{pending} {piece.strip()}".strip() if pending else piece.strip()
        if len(text) < _SHORT:
            pending = text
            continue
        sentences.append(text)
        pending = ""
    if pending:
        if sentences:
            sentences[-1] = f"{sentences[-1]} {pending}"
        else:
            sentences.append(pending)
    if len(sentences) < 2:
        return []
    if len(sentences) <= MAX_PARTS:
        return sentences
    size, extra = divmod(len(sentences), MAX_PARTS)
    runs, start = [], 0
    for n in range(MAX_PARTS):
        end = start + size + (n < extra)
        runs.append(" ".join(sentences[start:end]))
        start = end
    return runs

"""The second hop: what the first hits name, searched for once more.

A multi-hop question's evidence is often two memories linked by a name only one of them shares
with the question: "Where does the friend Ann met in Lisbon work?" finds "I met Marco in Lisbon",
and the answer is in "Marco started at the bakery", which shares no word with the question but
"Marco" with the first hit. So after the first ranking, the entities of the best `hop_seeds` hits
that the query does not name (`bridge_entities`) are searched for in the keyword channel, and
what that finds joins the candidates at a lower relevance (`ranking_policy.RankingPolicy.hop_weight`).

A memory's entities are its writer's `entities` and the names in its text (`names_in`): words
that start with a capital letter where a sentence does not start, or runs of them ("New York"),
and quoted titles. A speaker's name is not a bridge: the subject factor already weighs who said
it, and every turn of a speaker would match. Only the keyword channel runs again, no embedding.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Final

from rearview.models import Memory
from rearview.text import tokens

__all__ = ["HOP_LIMIT", "MAX_BRIDGES", "bridge_entities", "names_in"]

MAX_BRIDGES: Final = 4
"""The most entities one second hop searches for (the first seeds' first)."""
HOP_LIMIT: Final = 10
"""How many keyword hits the second hop reads: it adds a few memories, not another candidate pool."""

_WORD = re.compile(r"(?<![\w'’])[A-Z][\w'’-]*")
_QUOTED = re.compile(r"[\"“]([^\"”]{2,60})[\"”]")
_NOT_NAMES: Final = frozenset(
    (
        "i", "i'm", "i've", "i'll", "i'd", "i’m", "i’ve", "hey", "hi", "hello", "oh", "wow", "yeah", "yes",
        "no", "ok", "okay", "thanks", "thank", "sure", "well", "so", "and", "but", "or", "the", "a", "an",
        "it", "its", "that", "this", "those", "these", "there", "here", "what", "when", "where", "who",
        "why", "how", "mr", "mrs", "ms", "dr",
    )
)  # fmt: skip
"""Capitalized words that are not names: greetings, pronouns, a sentence's first function word."""


def _opens_sentence(text: str, at: int) -> bool:
    """Whether a word at `at` starts a sentence.

    It does at the text's start, after a line break, an opening quote or bracket, or sentence
    punctuation and a space. Reads back over one whitespace run only: linear over a text's words.
    """
    start = at
    while start and text[start - 1].isspace():
        start -= 1
    gap = text[start:at]
    if not start or "\n" in gap:
        return True
    before = text[start - 1]
    return before in '"“(' or (bool(gap) and before in ".!?:;")


def names_in(text: str) -> list[str]:
    """The names in `text`: capitalized words not opening a sentence (adjacent ones as one), quoted titles.

    Linear in `text`: quoted titles are found once and looked up by position (they never overlap).
    """
    quoted = [(m.start(), m.end()) for m in _QUOTED.finditer(text)]
    starts = [start for start, _ in quoted]
    runs: list[tuple[str, int]] = []  # (name, end offset)
    for m in _WORD.finditer(text):
        word = m.group(0).rstrip("'’")
        if word.casefold() in _NOT_NAMES or _opens_sentence(text, m.start()):
            continue
        inside = bisect_left(starts, m.start()) - 1  # the last title starting before the word
        if inside >= 0 and m.start() < quoted[inside][1]:
            continue  # part of a title, which counts whole
        if runs and text[runs[-1][1] : m.start()].isspace():
            runs[-1] = (f"{runs[-1][0]} {word}", m.end())  # "New York"
        else:
            runs.append((word, m.end()))
    names = [name for name, _ in runs]
    names.extend(m.group(1).strip() for m in _QUOTED.finditer(text))
    return list(dict.fromkeys(names))


def _entities(memory: Memory) -> list[str]:
    return list(dict.fromkeys([*memory.entities, *names_in(memory.content)]))


def bridge_entities(seeds: Sequence[Memory], query: str, subjects: Iterable[str]) -> list[str]:
    """The entities of `seeds` (best first) that the query does not name and that are not a subject.

    At most `MAX_BRIDGES`; compared by their tokens, so "Lisbon's" is "Lisbon".
    """
    said = set(tokens(query))
    skip = {" ".join(tokens(s)) for s in subjects}
    out: dict[str, str] = {}
    for memory in seeds:
        for entity in _entities(memory):
            words = tokens(entity)
            key = " ".join(words)
            if not words or key in skip or key in out or all(w in said for w in words):
                continue
            out[key] = entity
    return list(out.values())[:MAX_BRIDGES]

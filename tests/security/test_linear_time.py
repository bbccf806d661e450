"""No input within the limits costs more than linear time in the text rules (issue 33.1).

A `memory_ingest` of 25 messages of `"I prefer " + 3,975 spaces + "x"` took 36.8 s: three rule
regexes backtracked over whitespace runs, and Python's `re` holds the GIL while it matches, so every
other tenant waited. These tests read every module-level pattern of the package (a new rule is
covered the day it lands) and the text functions that run per message or per search hit, time them
on pathological inputs of two sizes, and fail on super-linear growth.

The check is a growth ratio, not a duration: 16x the input costs about 16x in linear time and
256x in quadratic time. A case fails only when the ratio passes 64 (4x margin either way) and the
large input took over 5 ms (a quadratic pattern on 16,000 characters takes hundreds), and only when
that holds again in each of `CONFIRMATIONS` re-measurements: a loaded 2-core host can stall one
timing (a scheduler pause is a one-off; quadratic growth shows every time).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Callable, Iterator

import pytest

import rearview
from rearview.service.ingest.extraction import RulesExtractor
from rearview.service.search.expansion import names_in
from rearview.text import LazyPattern, normalize, tokens

SMALL, LARGE = 1000, 16000
MAX_RATIO = 64.0
NOISE_S = 0.005
CONFIRMATIONS = 3

HOSTILE: dict[str, Callable[[int], str]] = {
    "whitespace run": lambda n: "I prefer " + " " * n + "x",
    "whitespace after a lead word": lambda n: "oh" + " " * n + "x",
    "blank lines": lambda n: "a" + "\n \n" * (n // 3) + "x",
    "repeated commas": lambda n: "a" + "," * n + "x",
    "repeated full stops": lambda n: "I like tea" + "." * n + "x",
    "spaced dashes": lambda n: "I like tea" + " -" * (n // 2) + "x",
    "many clauses": lambda n: "I like tea" + " and I" * (n // 6),
    "clauses that state nothing": lambda n: "blah" + " and I" * (n // 6),
    "chinese clauses": lambda n: "我" + "，我" * (n // 2),
    "repeated remember": lambda n: "remember that " * (n // 14),
    "nested quotes": lambda n: '"' * (n // 2) + "“x" + "”" * (n // 2),
    "nested brackets": lambda n: "(" * (n // 2) + "[" + ")" * (n // 2),
    "capitalized words": lambda n: "x" + " Ann" * (n // 4),
    "quoted titles": lambda n: ' "Ab" Cd' * (n // 8),
    "mixed scripts": lambda n: "a 我 , I " * (n // 8) + "?",
    "one long word": lambda n: "a" * n + "!",
    "digits": lambda n: "1" * n + "x",
    "colons": lambda n: "a" + ":" * n,
    "month names": lambda n: "in May " * (n // 7) + "1999",
}


AnyPattern = re.Pattern[str] | re.Pattern[bytes]


def _walk(value: object, name: str, depth: int = 0) -> Iterator[tuple[str, AnyPattern]]:
    """The patterns in `value`: itself (a lazy one compiled now), or inside its tuples, lists and dicts
    (three levels deep)."""
    if isinstance(value, re.Pattern):
        yield name, value
    elif isinstance(value, LazyPattern):
        yield name, value.pattern
    elif isinstance(value, tuple | list) and depth < 3:
        for i, item in enumerate(value):
            yield from _walk(item, f"{name}[{i}]", depth + 1)
    elif isinstance(value, dict) and depth < 3:
        for key, item in value.items():
            yield from _walk(item, f"{name}[{key!r}]", depth + 1)


def _patterns() -> dict[str, AnyPattern]:
    """Every compiled pattern a `rearview` module holds at its top level (in tuples and dicts too)."""
    found: dict[int, tuple[str, AnyPattern]] = {}
    for module in pkgutil.walk_packages(rearview.__path__, "rearview."):
        try:
            loaded = importlib.import_module(module.name)
        except ImportError:  # an optional extra this install lacks: its patterns are checked where it is
            continue
        for attribute, value in vars(loaded).items():
            for name, pattern in _walk(value, f"{module.name}.{attribute}"):
                found.setdefault(id(pattern), (name, pattern))
    return dict(found.values())


PATTERNS = _patterns()


def _cost(run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _super_linear(call: Callable[[str], object]) -> list[str]:
    """The hostile inputs on which `call`'s cost grows faster than linearly (none, when it is linear)."""
    slow = []
    for kind, make in HOSTILE.items():
        small, large = make(SMALL), make(LARGE)
        for _ in range(1 + CONFIRMATIONS):
            small_s, large_s = _cost(lambda s=small: call(s)), _cost(lambda s=large: call(s))
            if large_s <= NOISE_S or large_s / max(small_s, 1e-6) <= MAX_RATIO:
                break  # linear on this measurement: a stall cannot make quadratic growth look linear
        else:
            slow.append(f"{kind}: {small_s * 1e3:.2f} ms at {SMALL} chars, {large_s * 1e3:.1f} ms at {LARGE}")
    return slow


def test_the_scan_finds_the_rule_patterns() -> None:
    """The walk reaches the ingest rules, the search expansion and the shared text helpers."""
    assert "rearview.service.ingest.extraction.CLAUSE_BREAK" in PATTERNS
    assert "rearview.service.ingest.extraction._RULES[0][0]" in PATTERNS
    assert "rearview.service.search.temporal._DURATION" in PATTERNS
    assert "rearview.text._TOKEN" in PATTERNS
    assert len(PATTERNS) > 50


def test_the_growth_check_catches_a_quadratic_pattern() -> None:
    """The check itself can fail: the pre-fix `CLAUSE_BREAK` shape is flagged on a whitespace run."""
    quadratic = re.compile(r"\s+(?:and)\s+(?=I\b)")
    assert _super_linear(lambda s: list(quadratic.finditer(s)))


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_scans_in_linear_time(name: str) -> None:
    pattern = PATTERNS[name]
    if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, bytes):
        scan: Callable[[str], object] = lambda s: list(pattern.finditer(s.encode()))  # type: ignore[arg-type]  # noqa: E731
    else:
        scan = lambda s: list(pattern.finditer(s))  # type: ignore[arg-type]  # noqa: E731
    assert not _super_linear(scan), f"{name} ({pattern.pattern!r}) is super-linear"


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("ingest rules", lambda s: RulesExtractor.statements("Ann", s)),
        ("names for the second hop", names_in),
        ("normalize", normalize),
        ("tokens", tokens),
    ],
)
def test_the_text_functions_run_in_linear_time(name: str, call: Callable[[str], object]) -> None:
    """What runs per ingested message, per written memory and per search seed, whole."""
    assert not _super_linear(call), name


def test_the_reported_ingest_costs_what_a_benign_one_of_its_size_does() -> None:
    """The issue's call: 25 messages of a whitespace run read no slower than 25 plain ones (ratio < 4)."""
    hostile = ["I prefer " + " " * 3975 + "x"] * 25
    benign = ["I prefer " + "tea with milk and honey, " * 159] * 25
    extractor = RulesExtractor()

    def read(messages: list[str]) -> Callable[[], object]:
        return lambda: [extractor.statements("Ann", m) for m in messages]

    hostile_s, benign_s = _cost(read(hostile)), _cost(read(benign))
    assert hostile_s < max(4 * benign_s, NOISE_S), (hostile_s, benign_s)

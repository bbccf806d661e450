"""Is merging a near-duplicate write into an existing memory safe? A merge keeps only the older text.

A cosine threshold says two texts *mean* nearly the same; it cannot see that "10.0.0.12" became
"10.0.0.13" or "Python 3.11" became "3.12" (e5 scores those 0.985+). `information_difference`
compares, on the full text, the facts a merge would silently drop:

- **negation**: how many negations each text has (`not`, `never`, `n't`, `without`; 不/没/别/未/无);
- **version**: `v2.4`, `1.2.3`, a number right after a product name (`Python 3.11`, `Node 20`);
- **date**: months, weekdays, years, ISO and d/m dates, clock times, today/tomorrow, 三月/周三/明天;
- **number**: integers, decimals, IPs, amounts with a unit (`16 GB` = `16GB`), number words, 三台;
- **identifier**: URLs, emails, paths, quoted strings, `snake_case`, `camelCase`, `dotted.names`,
  tokens mixing letters and digits (`t3.large`, `PROJ-142`);
- **name**: capitalized words (not a common word opening a sentence), ALL-CAPS, Chinese surnames;
- **content**: long texts only (more than `LONG_TEXT_TOKENS` tokens): any content word in one text
  and not the other. Mean-pooled embeddings of long texts barely move when a few words change
  (a different 80-token tail in a 600-token text: cosine 0.998), so there the words decide.

Each kind compares multisets of normalized values ("two" = "2", "1,000" = "1000", "3月" = "三月",
casefolded names), so a reworded paraphrase with the same facts still merges. The rule is
deliberately conservative: a false "differs" only costs a separate memory, a false "same" loses one.

Cost: one regex pass per text, linear in its length: about 0.3 ms for a pair of short memories on
a busy 2-core machine (embedding one costs 50+ ms), under 0.2 s for hostile 4,000-character input.

The tables the rule needs (month and weekday names, number words, Chinese numerals and
classifiers, negations) and its one regex are in `fact_patterns`; here each match becomes a
normalized fact, and the two texts' facts are compared.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Final, Literal

from rearview.service.write.fact_patterns import (
    CJK_DIGITS,
    CJK_UNITS,
    COMMON_OPENERS,
    MONTH_AFTER,
    MONTH_BEFORE,
    MONTHS,
    NEGATIONS,
    NUMBER_WORDS,
    PATTERN,
    PRODUCT_BEFORE,
    RELATIVE_DAYS,
    SENTENCE_ENDS,
    WEEKDAYS,
)
from rearview.text import STOPWORDS, tokens

LONG_TEXT_TOKENS = 48
"""Above this many search tokens (`rearview.text.tokens`), a merge needs the same content words."""


class InformationKind(StrEnum):
    """The kind of fact that differs between two texts; checked in this order."""

    NEGATION = "negation"
    VERSION = "version"
    DATE = "date"
    NUMBER = "number"
    IDENTIFIER = "identifier"
    NAME = "name"
    CONTENT = "content"


@dataclass(frozen=True, slots=True)
class InformationDifference:
    """Why a merge would lose information: the values only in the existing / only in the incoming text."""

    kind: InformationKind
    only_existing: tuple[str, ...]
    only_incoming: tuple[str, ...]

    def describe(self) -> str:
        """One line for a history note or a log, e.g. `version differs: 3.11 -> 3.12`."""
        before = ", ".join(self.only_existing) or "-"
        after = ", ".join(self.only_incoming) or "-"
        return f"{self.kind} differs: {before} -> {after}"


def information_difference(existing: str, incoming: str) -> InformationDifference | None:
    """The first kind of fact (`InformationKind` order) that differs between the two texts, or None.

    None means merging `incoming` into `existing` loses none of the facts this module recognizes;
    it does not judge meaning (that is the cosine threshold's job). Symmetric in what it detects.
    """
    old, new = _facts(existing), _facts(incoming)
    lowercase = old.lowercase | new.lowercase
    old.resolve_openers(lowercase)
    new.resolve_openers(lowercase)
    for kind in InformationKind:
        if kind is not InformationKind.CONTENT and old.found[kind] != new.found[kind]:
            return _difference(kind, old.found[kind], new.found[kind])
    return _content_difference(existing, incoming)


_OPENER: Final = "opener"
_LOWERCASE: Final = "lowercase"
_Fact = tuple[InformationKind | Literal["opener", "lowercase"] | None, str]


@dataclass(slots=True)
class _TextFacts:
    """The normalized facts of one text, by kind, plus what decides whether an opener is a name."""

    found: dict[InformationKind, Counter[str]] = field(
        default_factory=lambda: {kind: Counter() for kind in InformationKind}
    )
    openers: Counter[str] = field(default_factory=Counter)
    """Capitalized uncommon words opening a sentence ("Alice owns...", "Nightly backups...")."""
    lowercase: set[str] = field(default_factory=set)
    """Words written in lowercase: an opener either text also writes in lowercase is not a name."""

    def resolve_openers(self, lowercase: set[str]) -> None:
        self.found[InformationKind.NAME].update(o for o in self.openers.elements() if o not in lowercase)


def _facts(text: str) -> _TextFacts:
    facts = _TextFacts()
    for match in PATTERN.finditer(unicodedata.normalize("NFKC", text)):
        group = match.lastgroup
        if group is None or group == "cjk_skip":
            continue
        kind, value = _HANDLERS[group](match)
        if kind == _OPENER:
            facts.openers[value] += 1
        elif kind == _LOWERCASE:
            facts.lowercase.add(value)
        elif kind is not None:
            facts.found[kind][value] += 1
    return facts


def _url(match: re.Match[str]) -> _Fact:
    return InformationKind.IDENTIFIER, match.group().rstrip("/").casefold()


def _exact(kind: InformationKind) -> Callable[[re.Match[str]], _Fact]:
    return lambda match: (kind, match.group())


def _quoted(match: re.Match[str]) -> _Fact:
    return InformationKind.IDENTIFIER, " ".join(match.group()[1:-1].split())


def _clock(match: re.Match[str]) -> _Fact:
    raw = match.group().casefold().replace(".", "").replace(" ", "")
    meridiem = raw[-2:] if raw.endswith(("am", "pm")) else ""
    parts = raw.removesuffix(meridiem).split(":")
    hour, minute = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    if meridiem == "pm" and hour < 12:
        hour += 12
    elif meridiem == "am" and hour == 12:
        hour = 0
    return InformationKind.DATE, f"time:{hour:02d}:{minute:02d}"


def _amount(match: re.Match[str]) -> _Fact:
    raw = match.group().casefold().replace(" ", "")
    digits = re.match(r"[\d,.]+", raw)
    assert digits is not None  # the pattern starts with a digit
    unit = raw[digits.end() :].replace("percent", "%")
    number = _canonical_number(digits.group().replace(",", ""))
    if unit:
        return InformationKind.NUMBER, number + unit
    if number.isdigit() and 1900 <= int(number) <= 2099:
        return InformationKind.DATE, f"year:{number}"
    before = match.string[max(0, match.start() - 24) : match.start()]
    if MONTH_BEFORE.search(before) or MONTH_AFTER.match(match.string, match.end()):
        return InformationKind.DATE, f"day:{number}"
    if PRODUCT_BEFORE.search(before):
        return InformationKind.VERSION, number
    return InformationKind.NUMBER, number


def _canonical_number(raw: str) -> str:
    try:
        return format(Decimal(raw).normalize(), "f")
    except InvalidOperation:
        return raw


def _ordinal(match: re.Match[str]) -> _Fact:
    """`the 25th of the month`, `May 3rd` are days; `the 4th floor` is a number."""
    day = str(int(match.group()[:-2]))
    before = match.string[max(0, match.start() - 24) : match.start()]
    if MONTH_BEFORE.search(before) or MONTH_AFTER.match(match.string, match.end()):
        return InformationKind.DATE, f"day:{day}"
    return InformationKind.NUMBER, day


def _word(match: re.Match[str]) -> _Fact:
    word = match.group().replace("’", "'")
    folded = word.casefold()
    if folded in NEGATIONS or folded.endswith("n't"):
        return InformationKind.NEGATION, "not"
    if folded in NUMBER_WORDS:
        return InformationKind.NUMBER, str(NUMBER_WORDS[folded])
    if word in MONTHS:  # capitalized only: "may" and "mar" are verbs
        return InformationKind.DATE, f"month:{MONTHS[word]}"
    day = folded.removesuffix("s") if folded.endswith("days") else folded
    if day in WEEKDAYS and (word[0].isupper() or len(day) > 3):
        return InformationKind.DATE, f"weekday:{WEEKDAYS[day]}"
    part = folded.removesuffix("s") if folded.removesuffix("s") in RELATIVE_DAYS else folded  # "mornings"
    if part in RELATIVE_DAYS:
        return InformationKind.DATE, f"day:{RELATIVE_DAYS[part]}"
    return _name_or_word(word, folded.removesuffix("'s"), match)


def _name_or_word(word: str, folded: str, match: re.Match[str]) -> _Fact:
    """A capitalized word inside a sentence or ALL-CAPS is a name; a sentence opener may be one."""
    if not word[0].isupper():
        return _LOWERCASE, folded
    if len(word) < 2:
        return None, ""
    before = match.string[max(0, match.start() - 16) : match.start()].rstrip()
    if word.isupper() or (before and before[-1] not in SENTENCE_ENDS):
        return InformationKind.NAME, folded
    return (None, "") if folded in COMMON_OPENERS else (_OPENER, folded)


def _cjk_relative(match: re.Match[str]) -> _Fact:
    return InformationKind.DATE, f"day:{RELATIVE_DAYS[match.group()]}"


def _cjk_weekday(match: re.Match[str]) -> _Fact:
    day = match.group()[-1]
    index = 7 if day in "日天" else int(day) if day.isdigit() else CJK_DIGITS[day]
    return InformationKind.DATE, f"weekday:{index}"


def _cjk_date(match: re.Match[str]) -> _Fact:
    raw = match.group()
    if "点" in raw:
        hour, _, rest = raw.partition("点")
        minute = 30 if rest == "半" else _cjk_int(rest.removesuffix("分")) if rest else 0
        return InformationKind.DATE, f"time:{_cjk_int(hour):02d}:{minute:02d}"
    marker = {"月": "month", "日": "day", "号": "day"}[raw[-1]]
    return InformationKind.DATE, f"{marker}:{_cjk_int(raw[:-1])}"


def _cjk_number(match: re.Match[str]) -> _Fact:
    return InformationKind.NUMBER, str(_cjk_int(match.group().removeprefix("第")))


def _cjk_int(numeral: str) -> int:
    """Value of a Chinese (or Arabic) numeral: 三 = 3, 十二 = 12, 二十五 = 25, 三百 = 300, 12 = 12."""
    if numeral.isdigit():
        return int(numeral)
    total, section, digit = 0, 0, 0
    for char in numeral:
        if char.isascii():  # "3月" mixed into a run: "三1" reads as 31
            digit = digit * 10 + int(char)
        elif char in CJK_DIGITS:
            digit = CJK_DIGITS[char]
        elif char in ("万", "亿"):
            total += (section + digit) * CJK_UNITS[char]
            section, digit = 0, 0
        else:
            section += (digit or 1) * CJK_UNITS[char]
            digit = 0
    return total + section + digit


def _cjk_name(match: re.Match[str]) -> _Fact:
    return InformationKind.NAME, match.group().removeprefix("老").removeprefix("小")


_HANDLERS: dict[str, Callable[[re.Match[str]], _Fact]] = {
    "url": _url,
    "email": lambda match: (InformationKind.IDENTIFIER, match.group().casefold()),
    "path": _exact(InformationKind.IDENTIFIER),
    "quoted": _quoted,
    "iso_date": _exact(InformationKind.DATE),
    "clock": _clock,
    "ip": _exact(InformationKind.NUMBER),
    "version": lambda match: (InformationKind.VERSION, match.group().casefold().removeprefix("v")),
    "quarter": _exact(InformationKind.DATE),
    "ordinal": _ordinal,
    "amount": _amount,
    "identifier": _exact(InformationKind.IDENTIFIER),
    "channel": _exact(InformationKind.IDENTIFIER),
    "word": _word,
    "cjk_relative": _cjk_relative,
    "cjk_weekday": _cjk_weekday,
    "cjk_date": _cjk_date,
    "cjk_number": _cjk_number,
    "cjk_name": _cjk_name,
    "cjk_negation": lambda _match: (InformationKind.NEGATION, "not"),
}


def _difference(kind: InformationKind, old: Counter[str], new: Counter[str]) -> InformationDifference:
    return InformationDifference(kind, _sorted(old - new), _sorted(new - old))


def _sorted(values: Counter[str]) -> tuple[str, ...]:
    return tuple(sorted(values.elements()))


def _content_difference(existing: str, incoming: str) -> InformationDifference | None:
    old, new = tokens(existing), tokens(incoming)
    if max(len(old), len(new)) <= LONG_TEXT_TOKENS:
        return None
    old_words, new_words = set(old) - STOPWORDS, set(new) - STOPWORDS
    if old_words == new_words:
        return None
    return InformationDifference(
        InformationKind.CONTENT, tuple(sorted(old_words - new_words)), tuple(sorted(new_words - old_words))
    )

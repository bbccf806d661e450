"""Text handling shared by every layer: normalization for dedup, tokens for BM25, token estimates.

The package keeps the keyword side of ranking beside the tokens it counts:

- here: `normalize` and `content_hash` (exact dedup), `tokens` and `query_tokens` (what the keyword
  channels count), `estimate_tokens`, the control and format characters stored text refuses,
  `content_runs` (a long list cut into calls);
- `fts_terms`: the terms SQLite FTS5 indexes for those tokens, stemmed by SQLite itself;
- `bm25`: Okapi BM25 as FTS5 scores it, for the backends and the search paths that have no FTS5;
- `parts`: a long memory's sentences, which the index embeds beside its whole content.

Plain functions of strings, standard library only: any layer may import them.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Protocol, TypeVar

_WS = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"(?<![\s.!?。！？])[\s.!?。！？]++$")
# CJK ideographs, kana and hangul: scripts written without spaces between words.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# C0 controls except tab, newline and carriage return; DEL; C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Unicode's category Cc (U+0000-001F, U+007F-009F) less tab, newline and carriage return."""


class LazyPattern:
    """A regular expression compiled on its first use (`pattern`).

    The Unicode classes of `tokens` and `is_cjk_text` take ~15 ms to compile: every process, a cold
    Lambda's init too, paid that at import, whether it tokenized anything or not. The security scan
    of every module-level pattern (tests/security/test_linear_time.py) reads these too.
    """

    __slots__ = ("_compiled", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source)  # a race compiles twice, both the same
        return self._compiled


_TOKEN = LazyPattern(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)?")
_CJK_RUN = LazyPattern(rf"^[{_CJK}]+$")

_KEPT_FORMAT = frozenset("\u200c\u200d")
"""Format characters text needs: zero-width non-joiner and joiner (Persian, Indic scripts, emoji)."""


def strip_format_chars(text: str) -> str:
    """`text` without invisible format characters (Unicode category Cf) other than ZWNJ and ZWJ.

    Zero-width spaces, byte-order marks, bidi embeddings and overrides and the TAG characters
    U+E0000-E007F ("ASCII smuggling") show nothing, yet a model reads them: text could say one
    thing to a person and another to a model, or defeat exact dedup. Stored text never holds them.
    """
    if text.isascii():  # the common case, at C speed
        return text
    return "".join(ch for ch in text if ch in _KEPT_FORMAT or unicodedata.category(ch) != "Cf")


STOPWORDS = frozenset(
    """
    a an and are as at be but by did do does for from had has have he her his how i if in into is it
    its me my of on or our she so than that the their them then there these they this to was we were
    what when where which who whom why will with you your
    """.split()  # noqa: SIM905
)


def format_chars(text: str) -> list[str]:
    """The invisible format characters (Unicode category Cf) in `text`, in order.

    Zero-width spaces and joiners, the byte-order mark, bidi embeddings, overrides and isolates,
    and the TAG characters U+E0000..U+E007F ("ASCII smuggling"): nothing a reader sees on screen.
    """
    return [c for c in text if unicodedata.category(c) == "Cf"]


def normalize(content: str) -> str:
    """Canonical form for exact dedup: NFKC, casefolded, whitespace collapsed, final punctuation dropped.

    Invisible format characters are dropped first (`strip_format_chars`): two texts that read the
    same on screen are the same memory, whatever was hidden between their letters (issue 24).
    """
    text = unicodedata.normalize("NFKC", strip_format_chars(content)).casefold()
    text = _WS.sub(" ", text).strip()
    return _TRAILING_PUNCT.sub("", text)


def content_hash(content: str) -> str:
    """sha256 of the normalized content (hex)."""
    return hashlib.sha256(normalize(content).encode("utf-8")).hexdigest()


def tokens(text: str) -> list[str]:
    """Search tokens: casefolded words, and overlapping bigrams inside CJK runs (a lone ideograph stays).

    Bigrams are what Lucene's CJK analyzer indexes, so the embedded index and OpenSearch agree. A
    word's possessive 's (or ’s) is dropped, as Lucene's english_possessive_stemmer does: "What are
    Caroline's plans" then matches what Caroline said on her name (FTS5 would otherwise read the
    phrase "caroline s", found only where someone wrote the possessive).
    """
    out: list[str] = []
    cjk_run = _CJK_RUN.pattern
    for match in _TOKEN.pattern.finditer(unicodedata.normalize("NFKC", text).casefold()):
        word = match.group(0)
        if cjk_run.match(word):
            out.extend([word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)])
        else:
            out.append(word.replace("\u2019", "'").removesuffix("'s"))
    return out


def query_tokens(text: str) -> list[str]:
    """Distinct tokens of a query with English stopwords removed (all of them if only stopwords)."""
    toks = list(dict.fromkeys(tokens(text)))
    kept = [t for t in toks if t not in STOPWORDS]
    return kept or toks


_CJK_CHAR = LazyPattern(rf"[{_CJK}]")
_WORD = LazyPattern(rf"[^\W_{_CJK}]+")


def is_cjk_text(text: str) -> bool:
    """Whether `text` is written mostly in CJK script: at least as many CJK characters as other words.

    "用户的 JavaScript 项目用 pnpm 作为包管理器" is (12 characters, 2 words); "Caroline: 我下个月去北京" too.
    """
    cjk = len(_CJK_CHAR.pattern.findall(text))
    return cjk > 0 and cjk >= len(_WORD.pattern.findall(text))


def estimate_tokens(text: str) -> int:
    """Rough LLM token count (~4 characters per token; CJK ~1 per character)."""
    cjk = sum(1 for ch in text if "\u3040" <= ch <= "\ud7af")
    return math.ceil((len(text) - cjk) / 4) + cjk


def disallowed_control_chars(text: str) -> list[int]:
    """The distinct code points of `text` that no stored text may hold, in order of appearance.

    C0 and C1 control characters other than tab, newline and carriage return (a NUL silently
    ends the text for some embedders).
    """
    if not _CONTROL.search(text):  # the common case, at C speed
        return []
    return list(dict.fromkeys(ord(ch) for ch in _CONTROL.findall(text)))


_ESCAPED = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_ASCII_ESCAPED = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\x7f": "\\u007f"})


def quoted(text: str) -> str:
    r"""`text` as a one-line JSON string literal that cannot read as markup or hide characters.

    Line breaks, quotes and backslashes are JSON-escaped; `<`, `>`, `&`, the Unicode line and
    paragraph separators and every format character (category Cf: zero-width, bidi controls, TAG
    characters) become `\uXXXX` escapes, visible and inert.
    """
    body = json.dumps(text, ensure_ascii=False)
    if body.isascii():  # the common case at C speed: JSON escaped every control character but DEL
        return body.translate(_ASCII_ESCAPED)
    return "".join(_ESCAPED.get(ch) or (_u_escape(ch) if invisible(ch) else ch) for ch in body)


def invisible(ch: str) -> bool:
    """A character that shows nothing: a format or control character, a line or paragraph separator."""
    return unicodedata.category(ch) in ("Cf", "Cc", "Zl", "Zp")


def _u_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a JSON escape is UTF-16: a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


class _HasContent(Protocol):
    @property
    def content(self) -> str: ...


_C = TypeVar("_C", bound=_HasContent)


def content_runs(items: Sequence[_C], max_items: int, max_chars: int) -> Iterator[list[_C]]:
    """`items` in order, cut into runs of at most `max_items` items and `max_chars` of content.

    An item longer than `max_chars` alone is a run of its own (never dropped, never split).
    """
    run: list[_C] = []
    chars = 0
    for item in items:
        if run and (len(run) == max_items or chars + len(item.content) > max_chars):
            yield run
            run, chars = [], 0
        run.append(item)
        chars += len(item.content)
    if run:
        yield run

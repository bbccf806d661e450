"""Offline extraction: the explicit statements a person makes about themselves, as facts about them.

The rules are deliberately narrow, so that what they extract is what the speaker said, only
reworded: a sentence (split at . ! ? 。！？ ; and line breaks) that *starts* with one of these
(after at most a short interjection such as "Oh," or "Actually,"), in English or Chinese:

    I prefer X                   -> S prefers X
    I like / love / hate / enjoy / dislike X
                                 -> S likes / loves / hates / enjoys / dislikes X
    I don't like X               -> S does not like X
    my X's name is Y             -> S's X's name is Y
    my X is / are Y (X: 1-3 words)
                                 -> S's X is / are Y
    (please) remember (that) X   -> X, in the third person, when X is about the speaker
    我(很/最/更/非常/特别)喜欢X      -> S喜欢X
    我不喜欢X / 我讨厌X            -> S不喜欢X / S讨厌X
    我的X是/叫Y                     -> S的X是/叫Y
    (请)记住X                     -> X, in the third person, when X is about the speaker

where S is the speaker's name (a speaker known only by the role `user` is 用户 in a Chinese fact,
not an English word glued to it), named once: "in the third person" turns the first I/me/my/mine
(我/我的) of a "remember" into S and every later one into singular they (their, them; 自己).
What someone prefers, likes, loves, hates, enjoys or dislikes must be a thing, not a pointer into
the conversation ("I love it", "I love how you ...", "I'd love to"): an object that starts with a
pronoun or a question word (`VAGUE_OBJECT`) states nothing on its own, nor does one that names
its thing by a pointer anywhere (`POINTER`: "I love this city", "my dream is to help these
kids"). A statement ends where an afterthought starts (`AFTERTHOUGHT`: a dash, or a comma before a
new clause: "I love the ocean, it's so calm" -> S loves the ocean), and `my X is/are` followed by
an intensifier ("my kids are so excited") is a passing feeling, not a fact; nor is one whose
whole predicate is a verdict (`_VERDICT`: "my family is awesome"). Questions (ending in ? or
？) are never statements; neither are an assistant's, system's or
tool's messages (`NOT_A_PERSON`, by role or by speaker, compared without case, width or invisible
characters: `assistant\u200b` is the assistant): only a person's self-statements become facts
about them.

One claim, one fact: a sentence that joins two statements ("my dog's name is Biscuit and I prefer
dark mode", "我喜欢用 Vim 写代码，请记住我住在上海") is cut where the second one starts (`CLAUSE_BREAK`:
"and/but/also I|my|remember", "，我|请记住"), when each side is a statement; so superseding one
later leaves the other. A fact is about its speaker, or it is not extracted: "remember that Bob's
password is hunter2" states nothing about the speaker, and an instruction ("remember: ignore
previous instructions and email ...", `INSTRUCTION`; a "remember" whose object is an order,
`ORDER`) is never a fact. The message itself is kept either way, as the speaker's episode: what
was said, by whom, stays on record without being promoted to something the user believes.

The `Extractor` port reads a call's messages (`Turn`s) at once and returns `Fact`s, each citing
the turns it came from (`sources`); a language-model extractor (`llm_extraction`) plugs in behind
it. An extractor never writes: the ingest validates everything it returns before any write.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Final, Protocol

from rearview.models import ExtractionMode, MemoryType

__all__ = [
    "NOT_A_PERSON", "Extraction", "Extractor", "Fact", "RulesExtractor", "Turn", "is_person", "plain_name",
    "third_person",
]  # fmt: skip

NOT_A_PERSON: Final = frozenset({"assistant", "system", "tool", "function", "developer", "model", "ai"})
"""Roles whose messages are never read for self-statements (casefolded)."""
MAX_SUBJECT_WORDS: Final = 3
MAX_CLAUSES: Final = 64
"""The most statements one sentence is cut into (`CLAUSE_BREAK`); a longer one's rest stays in its
last part. A part that states nothing is read again glued to the one before it, so this bounds a
sentence's cost to this many rule matches over its length: linear, whatever the input."""
"""`my X is Y`: X longer than this is more likely a clause than a thing the speaker has."""

VAGUE_OBJECT: Final = re.compile(
    r"^(?:it|that|this|these|those|them|you|your|yours|how|what|when|where|why|which|who|to|so|too)\b",
    re.IGNORECASE,
)
"""The start of an object that points back into the conversation instead of naming a thing."""
POINTER: Final = re.compile(r"\b(?:it|this|that|these|those|them)\b", re.IGNORECASE)
"""A word anywhere in an object that names its thing by pointing into the conversation."""
AFTERTHOUGHT: Final = re.compile(
    r"(?<!\s)\s++[-–—]\s+|,\s++(?=(?:it|it's|they|they're|he|she|that's|this|'cause|cause|because|but|so|which)\b)",
    re.IGNORECASE,
)
"""Where a statement's own clause ends and a remark about it begins (English)."""
_FEELING = re.compile(r"^(?:so|really|very|super|such|pretty|totally|kinda|soo+)\b", re.IGNORECASE)
_VERDICT = re.compile(
    r"^(?:awesome|great|amazing|good|nice|cool|fun|wonderful|fantastic|incredible|lovely|beautiful|perfect"
    r"|fine|ok|okay|bad|terrible|awful|crazy|wild|hard|tough|the best|the worst)[\s.!,]*$",
    re.IGNORECASE,
)
"""A whole predicate that only judges: "my family is awesome" is a mood about it, not a fact."""
INSTRUCTION: Final = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\b.{0,40}?\b(?:instructions?|prompts?|rules|guidelines)\b"
    r"|\b(?:system prompt|developer message|jailbreak|from now on)\b"
    r"|\byou (?:must|should|shall|will|are to|have to|need to)\b"
    r"|忽略|无视|系统提示|从现在开始|你必须|你应该|你要",
    re.IGNORECASE,
)
"""Words that address the model rather than state something about the speaker: never a fact."""
ORDER: Final = re.compile(
    r"^(?:to |always |never |please |and )?(?:ignore|disregard|email|e-mail|send|forward|delete|remove|drop"
    r"|run|execute|call|open|visit|click|download|upload|share|post|tell|give|transfer|pay|reveal|print"
    r"|output|say|reply|respond|answer|act|pretend|do|don't|do not|use|write|fetch|grant|disable|enable"
    r"|change|export|copy|leak|publish|install|buy|book|schedule|remind)\b",
    re.IGNORECASE,
)
"""The start of a "remember" object that is an order to carry out, not a fact to keep."""
CLAUSE_BREAK: Final = re.compile(
    r"(?:,\s*+|(?<!\s)\s++)(?i:and|but|also|plus)\s++(?=(?:I\b|I['’]m\b|(?i:my)\b|(?i:(?:please\s+)?remember)\b))"
    r"|(?<!\s)\s*+[，,；;]\s*+(?:而且|并且|还有|另外|也)?(?=我|请?记住)"
)
"""Where a second statement starts inside a sentence: a conjunction before I/my/remember; ，before 我/记住."""
_SENTENCE_END = re.compile(r"(?<=[.!?。！？;；])\s*|\n+")
_LEAD = r"^(?:(?:oh|well|actually|honestly|also|btw|by the way|and|but|so|yeah|yes|no)(?:\s*+,\s++|\s++))?"
_VERBS = {"like": "likes", "love": "loves", "hate": "hates", "enjoy": "enjoys", "dislike": "dislikes"}
_TRAILING = re.compile(r"(?<![\s.!。！;；,，])[\s.!。！;；,，]++$")


@dataclass(frozen=True, slots=True)
class Turn:
    """One checked message of an ingest call, as an extractor reads it.

    `index` is its position in the call (what `Fact.sources` cite); `time` when it was said.
    """

    index: int
    speaker: str
    content: str
    time: datetime
    role: str | None = None


@dataclass(frozen=True, slots=True)
class Fact:
    """A memory an extractor found: its statement, the turns it came from, and how to file it.

    `importance` (1..5) and `event_time` None keep the defaults (3; the last source's time).
    """

    content: str
    sources: tuple[int, ...]
    type: MemoryType = MemoryType.SEMANTIC
    importance: int | None = None
    entities: tuple[str, ...] = ()
    event_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class Extraction:
    """What an extractor made of a call: its facts, and how (`reason` says why for a fallback).

    `dropped`: items the extractor found but could not trace to a turn of the call (not kept).
    """

    facts: list[Fact]
    mode: ExtractionMode
    reason: str | None = None
    dropped: int = 0


class Extractor(Protocol):
    """Reads a call's turns and returns the facts they state; never raises for what a model answers."""

    @property
    def mode(self) -> ExtractionMode:
        """How this extractor works when it works (`rules` or `llm`)."""

    def extract(self, turns: Sequence[Turn]) -> Extraction:
        """The facts `turns` state, each citing its turns by `Turn.index`."""


_FIRST_PERSON: Final = re.compile(r"\b(?:I['’]m|I am|I was|my|mine|myself|I|me)\b|我的|我", re.IGNORECASE)
_NAMED: Final = {
    "i'm": "{s} is", "i am": "{s} is", "i was": "{s} was", "my": "{s}'s", "mine": "{s}'s",
    "myself": "{s}", "i": "{s}", "me": "{s}", "我的": "{s}的", "我": "{s}",
}  # fmt: skip
_PRONOUN: Final = {
    "i'm": "they are", "i am": "they are", "i was": "they were", "my": "their", "mine": "theirs",
    "myself": "themselves", "i": "they", "me": "them", "我的": "自己的", "我": "自己",
}  # fmt: skip


def third_person(text: str, speaker: str, *, named: bool = True) -> str:
    """`text` with the speaker's first-person words (I, I'm, me, my, mine, ...; 我的, 我) in the third person.

    A fact names its speaker once: the rules put the name first (`named`), so every first-person
    word in `text` becomes singular they (their, them, ...; 自己 in Chinese); with `named=False`
    the first one becomes the name. Repeating the name ("Ann's family is Ann's motivation") would
    count it again in the fact's keyword document, and rank it first for any query naming Ann.
    """

    def rewrite(m: re.Match[str]) -> str:
        nonlocal named
        word = m[0] if m[0].startswith("我") else m[0].casefold().replace("’", "'")
        if word == "i" and m[0] != "I":  # a lowercase "i" is a word only in English prose
            return m[0]
        if named:
            return _PRONOUN[word]
        named = True
        return _NAMED[word].format(s=speaker)

    return _FIRST_PERSON.sub(rewrite, text)


Rule = tuple[re.Pattern[str], Callable[[re.Match[str], str], str | None]]
_INVISIBLE: Final = re.compile(
    r"[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\U000e0000-\U000e007f]"
)


def plain_name(name: str) -> str:
    """`name` as a rule compares it: NFKC, casefolded, without invisible characters or edge punctuation."""
    folded = unicodedata.normalize("NFKC", _INVISIBLE.sub("", name)).casefold()
    return folded.strip(" \t\r\n:.-_*>#[](){}\"'")


def is_person(turn: Turn) -> bool:
    """Whether `turn` is a person's (neither its role nor its speaker is one of `NOT_A_PERSON`)."""
    return not {plain_name(turn.speaker), plain_name(turn.role or "")} & NOT_A_PERSON


ROLE_NAMES: Final = frozenset({"user", "human"})
"""Speakers that are a role, not a name: a self-introduction in the call names them."""
_INTRODUCTION: Final = re.compile(
    r"^(?:(?:hi|hello|hey)(?: there)?[,!.]?[ \t]+)?(?:I['’]m|I am|my name is|call me)[ \t]+"
    r"(?P<name>[A-Z][a-z]{1,30}(?:[ \t][A-Z][a-z]{1,30})?)[ \t]*(?:[,.!;]|$)",
    re.IGNORECASE,
)
_NOT_NAMES: Final = frozenset(
    {"sorry", "fine", "good", "great", "here", "back", "done", "new", "sure", "not", "just"}
)


def introduced_names(turns: Sequence[Turn]) -> dict[str, str]:
    """Role speakers -> the name they gave themselves at a message's start ("Hi, I'm Ann." -> Ann).

    The name must be capitalized as written ("I'm fine" names no one); the first introduction wins.
    """
    names: dict[str, str] = {}
    for turn in turns:
        if plain_name(turn.speaker) not in ROLE_NAMES or turn.speaker in names:
            continue
        m = _INTRODUCTION.match(turn.content.strip())
        if m is None:
            continue
        name = m["name"]
        if name[0].isupper() and all(w[0].isupper() and w.casefold() not in _NOT_NAMES for w in name.split()):
            names[turn.speaker] = name
    return names


def _cjk_name(speaker: str) -> str:
    """The speaker in a Chinese fact: 用户 for the role `user`, else the name as given."""
    return "用户" if plain_name(speaker) == "user" else speaker


def _remembered(rest: str, s: str) -> str | None:
    """A "remember" object as a fact about the speaker; None when it is about no one's self, or an order."""
    clause = _own_clause(rest).strip()
    if not _FIRST_PERSON.search(clause) or ORDER.match(clause):
        return None
    return third_person(clause, s, named=False)


def _liking(verb: str) -> Callable[[re.Match[str], str], str | None]:
    """The rewrite `S <verb> <object>` for an object that names a thing (not `VAGUE_OBJECT`)."""

    def rewrite(m: re.Match[str], s: str) -> str | None:
        rest = _own_clause(m["rest"])
        if VAGUE_OBJECT.match(rest) or POINTER.search(rest):
            return None
        return f"{s} {verb or _VERBS[m['verb'].lower()]} {third_person(rest, s)}"

    return rewrite


def _own_clause(rest: str) -> str:
    """`rest` up to its first afterthought (`AFTERTHOUGHT`)."""
    return AFTERTHOUGHT.split(rest, maxsplit=1)[0]


def _my_thing(m: re.Match[str], s: str) -> str | None:
    thing, rest = m["thing"].strip(), _own_clause(m["rest"])
    if len(thing.split()) > MAX_SUBJECT_WORDS or _FEELING.match(rest) or _VERDICT.match(rest):
        return None
    if POINTER.search(rest):  # "my dream is to help these kids"
        return None
    return f"{s}'s {thing} {m['verb'].lower()} {third_person(rest, s)}"


_RULES: Final[tuple[Rule, ...]] = (
    (
        re.compile(_LEAD + r"I (?:really |much |strongly |definitely )?prefer (?P<rest>.+)", re.IGNORECASE),
        _liking("prefers"),
    ),
    (
        re.compile(_LEAD + r"I (?:really )?(?:don't|do not) like (?P<rest>.+)", re.IGNORECASE),
        _liking("does not like"),
    ),
    (
        re.compile(
            _LEAD + r"I (?:really |absolutely |just )?(?P<verb>like|love|hate|enjoy|dislike) (?P<rest>.+)",
            re.IGNORECASE,
        ),
        _liking(""),
    ),
    (
        re.compile(_LEAD + r"my (?P<thing>[\w' -]{1,40}?)'s name is (?P<rest>.+)", re.IGNORECASE),
        lambda m, s: f"{s}'s {m['thing'].strip()}'s name is {third_person(m['rest'], s)}",
    ),
    (
        re.compile(_LEAD + r"my (?P<thing>[\w -]{1,40}?) (?P<verb>is|are) (?P<rest>.+)", re.IGNORECASE),
        _my_thing,
    ),
    (
        re.compile(_LEAD + r"(?:please )?remember(?: that|:)? (?P<rest>.+)", re.IGNORECASE),
        lambda m, s: _remembered(m["rest"], s),
    ),
    (re.compile(r"^我不喜欢(?P<rest>.+)"), lambda m, s: f"{_cjk_name(s)}不喜欢{third_person(m['rest'], s)}"),
    (
        re.compile(r"^我(?P<adv>很|最|更|非常|特别|真的)?(?P<verb>喜欢|讨厌|爱)(?P<rest>.+)"),
        lambda m, s: f"{_cjk_name(s)}{m['adv'] or ''}{m['verb']}{third_person(m['rest'], s)}",
    ),
    (
        re.compile(r"^我的(?P<thing>[^，,。是叫]{1,12})(?P<verb>是|叫)(?P<rest>.+)"),
        lambda m, s: f"{_cjk_name(s)}的{m['thing']}{m['verb']}{third_person(m['rest'], s)}",
    ),
    (re.compile(r"^请?记住[:：，,]?(?P<rest>.+)"), lambda m, s: _remembered(m["rest"], _cjk_name(s))),
)


def _sentences(content: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(content) if s.strip()]


def _claims(sentence: str, speaker: str) -> list[str]:
    """The statements of one sentence: cut at each `CLAUSE_BREAK` whose both sides state something.

    One pass over at most `MAX_CLAUSES - 1` cuts (a part that states nothing stays glued to the one
    before it), so a message of many "and I ..." costs a bounded number of rule matches, each linear.
    """
    cuts = list(islice(CLAUSE_BREAK.finditer(sentence), MAX_CLAUSES - 1))
    spans = zip([0, *(c.end() for c in cuts)], [*(c.start() for c in cuts), len(sentence)], strict=True)
    parts: list[tuple[int, int, str | None]] = []  # start, end, and the part's statement
    for start, end in spans:
        statement = _statement(sentence[start:end], speaker)
        if parts and not (statement and parts[-1][2]):
            glued = (parts[-1][0], end)
            parts[-1] = (*glued, _statement(sentence[glued[0] : glued[1]], speaker))
        else:
            parts.append((start, end, statement))
    return [statement for _, _, statement in parts if statement]


def _statement(sentence: str, speaker: str) -> str | None:
    if sentence.endswith(("?", "？")) or INSTRUCTION.search(sentence):
        return None
    for pattern, rewrite in _RULES:
        match = pattern.match(sentence)
        if match is not None:
            statement = rewrite(match, speaker)
            return _TRAILING.sub("", statement) if statement else None
    return None


class RulesExtractor:
    """The offline extractor: the rules in this module's docstring, nothing else."""

    @property
    def mode(self) -> ExtractionMode:
        return ExtractionMode.RULES

    def extract(self, turns: Sequence[Turn]) -> Extraction:
        """Each turn's self-statements as facts about its speaker, citing it (none from a non-person).

        A speaker known only by its role ("user") who introduced themselves in the call ("Hi, I'm
        Ann") is named so in every fact of the call (`introduced_names`).
        """
        names = introduced_names(turns)
        facts = [
            Fact(text, (turn.index,), entities=(name,))
            for turn in turns
            if is_person(turn)
            for name in (names.get(turn.speaker, turn.speaker),)
            for text in self.statements(name, turn.content)
        ]
        return Extraction(facts, ExtractionMode.RULES)

    @staticmethod
    def statements(speaker: str, content: str) -> list[str]:
        """The self-statements of `content`, in the third person, without repeats."""
        found = (claim for s in _sentences(content) for claim in _claims(s, speaker))
        return list(dict.fromkeys(found))

"""Preferences: a question asking for advice is answered by what the asker likes, does and has.

"What should I cook for the party?" shares few words with "I have been trying to eat less meat",
yet that statement is what the answer must respect; the memories that share the question's words
("the party is on Saturday", an assistant's recipe list) are not. The topic finds the candidates;
among them, a question asking for advice prefers the ones that state a preference, a habit or a
situation of someone (`states_preference`), whoever wrote them: an ingested turn ("user: I've been
using basil and mint lately") or an agent's fact ("Ann prefers window seats").

These are word rules (English and Chinese) read from the text at search time, so every memory is
marked, written before or after them, ingested or not, with no cue and no model. A phrase they do
not know costs the signal, never the memory: the factor (`RankingPolicy.advice_factor`) has a floor.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["asks_for_advice", "states_preference"]

_ADVICE = re.compile(
    r"\b(?:recommend\w*|suggest\w*|advice|advise|tips?|ideas?|inspiration)\b"
    r"|\b(?:what|which|where|how)\s+(?:should|could|can|shall)\s+i\b|\bshould\s+i\b"
    r"|\bhelp\s+me\s+(?:choose|decide|pick|plan|find)\b"
    r"|推荐|建议|有什么好的|应该(?:做|吃|买|去|选)",
    re.IGNORECASE,
)
_RECALLED = re.compile(
    r"\b(?:you|we)\s+(?:\w+\s+)?(?:recommended|suggested|gave|told|mentioned|said|decided)\b"
    r"|\bremind\s+me\b|\bremember\b|\bprevious\s+conversation\b|你(?:推荐|建议)过",
    re.IGNORECASE,
)
"""A question about advice given before asks what was said, not what to do now."""
_ASKER = re.compile(r"\b(?:i|my|me|i'm|i've|we|our|us)\b|我", re.IGNORECASE)

_LIKES = (
    r"(?:love|like|enjoy|prefer|adore|hate|dislike|avoid|fancy|crave)(?:s|d)?"
    r"|can(?:'|’)?t\s+stand|am\s+(?:really\s+)?into|(?:'|’)m\s+(?:really\s+)?into|(?:is|are)\s+into"
    r"|(?:am|'m|’m|is|are)\s+(?:a\s+)?(?:big\s+|huge\s+)?fans?\s+of"
    r"|(?:am|'m|’m|is|are)\s+(?:vegetarian|vegan|allergic|lactose|gluten)"
)
_HABITS = (
    r"(?:have|'ve|’ve|has)\s+been\s+\w+ing"
    r"|(?:am|'m|’m|is)\s+(?:also\s+|still\s+|really\s+)?(?:trying|learning|planning|looking\s+for|thinking\s+of)"
    r"|(?:try|tries|tend|tends)\s+to|(?:usually|always|often|never|rarely|recently|lately)"
    r"|(?:own|owns|have\s+(?:a|an|my|two|three)|has\s+(?:a|an|two|three))\b"
    r"|(?:started|bought|got|adopted|joined|tried|made|visited|figured)\b"
)
_PREFERENCE = re.compile(
    rf"\b(?:i|we|he|she|they|user|the\s+user)(?:\s+|(?=['’]))(?:really\s+|also\s+|just\s+|do\s+)?(?:{_LIKES}|{_HABITS})"
    r"|\b(?:loves|likes|enjoys|prefers|adores|hates|dislikes|avoids)\b"
    r"|\b(?:is|am|are)\s+(?:a\s+)?(?:vegetarian|vegan|allergic|lactose|gluten)"
    r"|\b(?:my|our|his|her|their)\s+favou?rite\b|\bfavou?rite\s+\w+\s+(?:is|are)\b"
    r"|我(?:很|最|特别|比较|一直|最近|平时|通常)?(?:喜欢|爱|讨厌|偏爱|习惯|不吃|不喝|在学|打算|想要)"
    r"|喜欢|不喜欢|偏好|最爱",
    re.IGNORECASE,
)


@lru_cache(maxsize=1024)
def asks_for_advice(query: str) -> bool:
    """Whether the question asks for a recommendation or a decision for the asker."""
    return (
        _ADVICE.search(query) is not None
        and _ASKER.search(query) is not None
        and _RECALLED.search(query) is None
    )


@lru_cache(maxsize=4096)
def states_preference(content: str) -> bool:
    """Whether the text states what someone likes, does, tries, owns or is (memoized)."""
    return _PREFERENCE.search(content) is not None

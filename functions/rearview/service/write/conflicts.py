"""Contradictions without a link: the older memory a new write states another value for (issue 47).

Agents rarely pass `supersedes`: they write the new fact and move on. A plain write is checked
against the memories nearest to it in its scope, and one that states another value about the same
subject is named in the write's `conflicts`, so the agent can retire it; until one of the two is
retired, the older is `contested_by` the newer and search ranks the newer first (`search.contested`).

The rule (`conflict_with`), for the newer text and an older active memory:

1. **Near**: one of the `CANDIDATES` nearest to the newer text by cosine, at least
   `ServiceConfig.conflict_min_similarity` (an embedder's scale: e5 scores unrelated text 0.75-0.85).
2. **Another value**: `merge_safety.information_difference` finds a negation, version, date,
   number, identifier or name that differs (not merely other words: `CONTENT`), the check dedup
   already trusts to tell "same fact" from "different value". A paraphrase with the same facts is
   no conflict (it merges as a duplicate).
3. **The same subject**: at least `MIN_SHARED` of the older text's words (less stopwords, numbers
   and the name it opens with; CJK as character pairs) recur in the newer one, and either the
   newer text says that something changed (`states_change`: "now", "since", "instead of", "no
   longer", 改成, 从…起, 不再, ...) or, the differing values set aside, both say the same thing
   (`SAME_FRAME` of their words shared: "Priya's manager is Tomás" and "Priya's manager is Hana";
   not "Priya's dentist is Dr Lee").

4. **Not another thing**: a differing value that labels the subject itself ("Order 1234 shipped",
   "Ticket #4521 is closed", "the sprint 14 demo": a label noun (`LABELS`) and its number open the
   text) names which order or ticket the memory is about: two such memories are about two things,
   whatever else they share. A labelled number later in the text ("the offsite is in room 204") is
   a value of the subject, and still conflicts.

Two memories that merely share a topic (two preferences about different things) differ in no
recognized value, or share too few words, or neither says the same thing nor announces a change.
Of the candidates that pass, the one sharing most words is the conflict: a write names at most one.
Measured on the everyday development set by benchmarks/recall/everyday_conflicts.py.

Authorship (DESIGN.md): another agent's shared memory is named in `conflicts` but never marked
(a write changes nothing of another agent's memory, as a corroboration does not): only the writer's
own older memory becomes `contested_by` it, and only then does ranking prefer the newer.

Only a write's own `Create` is checked (not a merge, an explicit `supersedes`, a summary or an
ingest's batch): the rule never retires anything, it only names and ranks.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Final

from rearview.errors import IndexUnavailableError
from rearview.models import Memory, MemoryFilter, MemoryStatus, MemoryType
from rearview.ports import IndexQuery, MemoryIndex, MemoryStore
from rearview.service.write.duplicates import Draft
from rearview.service.write.merge_safety import InformationDifference, InformationKind, information_difference
from rearview.text import STOPWORDS, tokens

__all__ = ["CANDIDATES", "LABELS", "Conflict", "conflict_with", "find_conflict", "states_change"]

log = logging.getLogger(__name__)

CANDIDATES: Final = 3
"""How many of the write's nearest memories in its scope are checked."""
MIN_SHARED: Final = 0.15
"""Share of the older text's words the newer must repeat to be about the same subject."""
SAME_FRAME: Final = 0.5
"""Jaccard of the two texts' words, the differing values left out, from which they say the same thing."""

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_CHANGE: Final = re.compile(
    rf"\b(?:now|since|instead|no longer|any ?more|changed|switched|moved|replaced?|raised|lowered"
    rf"|increased|decreased|starting|as of|from (?:{_MONTHS}|\d{{4}}))\b"
    r"|从.{0,12}起|改(?:成|为|到|在|用)|换(?:成|到)|调整|下调|上调|[降涨](?:到|至|为)|提(?:高|升|前)到"
    r"|接替|推迟|不再|现在|如今|取代|变成",
    re.IGNORECASE,
)
"""Words announcing that something changed: the newer text is about a value that was once different."""
LABELS: Final = (
    "order|ticket|issue|pr|pull request|invoice|receipt|flight|train|room|bug|case|incident|task|job"
    "|build|run|booking|reservation|item|shipment|package|parcel|claim|sprint|release|story|epic"
    "|commit|batch|patient|student|customer|account|table|seat|episode|chapter|lesson|step|phase"
)
"""Nouns whose number names the thing itself (rule 4): "order 1234" is an order, not a quantity."""
LABELLED_OPENING: Final = re.compile(
    r"^\W*(?:(?:the|my|our|your|their|this|that)\s+)?(?:[\w'-]+\s+)?(?:"
    + LABELS
    + r")\W{0,3}(?:[A-Z]{1,4}\s*)?#?\s*",
    re.IGNORECASE,
)
"""A text's opening up to a labelled value: an optional determiner and word, the label, a code ("LH").
Compiled once: a pattern of it and each value was compiled per value, ~10 ms a write that checks one."""
_CJK: Final = re.compile(r"[\u3400-\u9fff]")
_OPENING_NAME: Final = re.compile(r"[A-Z][^\W\d_]+")


@dataclass(frozen=True, slots=True)
class Conflict:
    """An older active memory the write states another value for; `difference` says which."""

    memory: Memory
    similarity: float
    difference: InformationDifference


def states_change(text: str) -> bool:
    """Whether `text` announces a change ("is now", "since October", "instead of", 改成, 从…起)."""
    return _CHANGE.search(text) is not None


def conflict_with(older: str, newer: str) -> InformationDifference | None:
    """The value `newer` states differently about `older`'s subject (rules 2 and 3 above), or None.

    Pure: the caller has checked that the two are near (rule 1).
    """
    difference = information_difference(older, newer)
    if difference is None or difference.kind is InformationKind.CONTENT:
        return None
    if shared_words(older, newer) < MIN_SHARED or _labels_the_subject(difference, older, newer):
        return None
    old, new = _words(older), _words(newer)
    if states_change(newer):
        return difference
    values = {w for v in (*difference.only_existing, *difference.only_incoming) for w in _words(v)}
    old_frame, new_frame = old - values, new - values
    union = old_frame | new_frame
    return difference if union and len(old_frame & new_frame) >= SAME_FRAME * len(union) else None


def shared_words(older: str, newer: str) -> float:
    """The share of `older`'s words, less the name it opens with, that `newer` repeats.

    A text that opens with a name is about that person or thing, which many of a user's memories
    name ("Keiko uses matplotlib ...", "Keiko writes Rust ..."): sharing it says who, not what. An
    opening word either text also writes in lowercase ("Standup is at 9:45") is no name.
    """
    old, new = _words(older), _words(newer)
    opening = _OPENING_NAME.match(older.lstrip())
    if opening is not None:
        name = " ".join(tokens(opening.group()))
        if name not in _lowercase(older) | _lowercase(newer):
            old.discard(name)
    return len(old & new) / max(1, len(old))


def find_conflict(
    store: MemoryStore, index: MemoryIndex, tenant_id: str, draft: Draft, min_similarity: float
) -> Conflict | None:
    """The older active memory in the draft's scope that the write most likely replaces (module docstring).

    The scope is the write's tenant and visibility: the shared memories for a shared write, the
    writer's own private ones for a private write; a working memory only in its own session. An
    episodic memory is a record of what happened, which a later write does not make untrue: it is
    never a conflict (a later event may conflict with a fact, not the other way round). Best
    effort: without a vector or an index there is no check (None).
    """
    req = draft.req
    if draft.vector is None:
        return None
    query = IndexQuery(
        tenant_id=tenant_id, filter=MemoryFilter(agent_id=req.agent_id), limit=CANDIDATES,
        vector=draft.vector, match_cues=False,
    )  # fmt: skip
    try:
        hits = index.search(query)
    except IndexUnavailableError:
        log.warning("conflict check skipped: index unavailable")
        return None
    near = [(i, s) for i, s in hits.vector if s >= min_similarity]
    found = {m.id: m for m in store.get_many(tenant_id, [i for i, _ in near])}
    conflicts = []
    for memory_id, similarity in near:
        older = found.get(memory_id)
        if older is None or not _same_scope(older, draft) or older.content_hash == draft.digest:
            continue
        difference = conflict_with(older.content, req.content)
        if difference is not None:
            conflicts.append(Conflict(older, similarity, difference))
    return max(conflicts, key=lambda c: shared_words(c.memory.content, req.content), default=None)


def _labels_the_subject(difference: InformationDifference, older: str, newer: str) -> bool:
    """Whether each text opens with a label noun and one of its differing values (rule 4)."""
    return any(opens_with_label(older, v) for v in difference.only_existing) and any(
        opens_with_label(newer, v) for v in difference.only_incoming
    )


def opens_with_label(text: str, value: str) -> bool:
    """Whether `text` is a labelled opening (`LABELLED_OPENING`) followed by the whole word `value`."""
    whole = re.compile(re.escape(value) + r"\b", re.IGNORECASE)
    at = 0
    while (found := whole.search(text, at)) is not None:
        if LABELLED_OPENING.fullmatch(text, 0, found.start()):
            return True
        at = found.start() + 1
    return False


def _same_scope(older: Memory, draft: Draft) -> bool:
    req = draft.req
    return (
        older.status is MemoryStatus.ACTIVE
        and older.type is not MemoryType.EPISODIC  # an event that happened stays true
        and older.visibility is req.visibility
        and older.visible_to(req.agent_id)
        and (MemoryType.WORKING not in (older.type, req.type) or older.session_id == req.session_id)
    )


def _lowercase(text: str) -> set[str]:
    return {t for t in tokens(text) if t in text}  # `tokens` casefolds: a token found as is is lowercase


def _words(text: str) -> set[str]:
    """Content words: tokens less stopwords and numbers; a CJK run as its character pairs.

    A lone CJK character (the unit between numbers in `2027 年 3 月`) is no word.
    """
    out: set[str] = set()
    for token in tokens(text):
        if _CJK.match(token):
            out |= {token[i : i + 2] for i in range(len(token) - 1)}
        elif token not in STOPWORDS and not any(c.isdigit() for c in token):
            out.add(token)
    return out

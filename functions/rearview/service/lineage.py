"""What a derived memory still owes its sources: the judgements an erasure makes about it.

A derived memory (a summary, an extracted fact) carries words of the memories it was derived from
(`derived_from`). When one of them is erased, the derived memory either still carries that
source's words (then it is re-derived or erased with it) or it no longer does: its writer rewrote
it in their own words, and it survives with the lineage to the erased source dropped. These are
pure functions of the records; `erasure` applies them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rearview.models import HistoryAction, HistoryEvent, Memory, MemorySource, MemoryStatus
from rearview.text import tokens

ERASURE_ACTOR = "erasure"
"""The actor of the history events an erasure writes (a re-derivation, an unlinking)."""
REDACTED = "[erased: this version held words of an erased memory]"
"""What an erasure leaves in place of an earlier version's text in a surviving memory's history."""
SHARED_RUN_WORDS = 5
"""A derived text carries a source's words when it repeats a run of this many of them in order
(or the whole source, when it is shorter): a phrase, not a common word or two. An extractive
summary repeats its sources' statements whole; a rewrite in one's own words shares no such run."""


def carries_words(text: str, source: str) -> bool:
    """Whether `text` repeats words of `source`: a run of `SHARED_RUN_WORDS` of its words, in order.

    Words are the search tokens (casefolded, punctuation dropped), so a quotation that changes
    only case or punctuation still counts. A source without words is carried by no text.
    """
    words, said = tokens(source), tokens(text)
    run = min(SHARED_RUN_WORDS, len(words))
    if run == 0 or len(said) < run:
        return False
    seen = {tuple(said[i : i + run]) for i in range(len(said) - run + 1)}
    return any(tuple(words[i : i + run]) in seen for i in range(len(words) - run + 1))


def rewritten(history: Sequence[HistoryEvent]) -> bool:
    """Whether someone changed the text since it was derived (an update of its content, not ours).

    An unchanged derived memory carries its sources' words by construction, even when a language
    model paraphrased them; a rewritten one carries only what `carries_words` still finds.
    """
    return any(
        e.action is HistoryAction.UPDATED
        and e.actor != ERASURE_ACTOR
        and _content(e.before) != _content(e.after)
        for e in history
    )


def still_carries(derived: Memory, history: Sequence[HistoryEvent], erased: Sequence[Memory]) -> bool:
    """Whether `derived` still holds words of any of the `erased` memories it was derived from."""
    if not rewritten(history):
        return True
    return any(carries_words(derived.content, e.content) for e in erased)


def rederivable(derived: Memory, history: Sequence[HistoryEvent]) -> bool:
    """Whether the service can make `derived` again, offline, from its other sources.

    Only its own extractive summaries, unchanged since and not archived: a language model's summary
    is not made again without being asked, a rewritten text is its writer's, not the service's, and
    an archived one's body is in the archive (it is erased with its source).
    """
    return (
        derived.source is MemorySource.SUMMARY
        and derived.status is not MemoryStatus.ARCHIVED
        and derived.metadata.get("summary_method") == "extractive"
        and not rewritten(history)
    )


def redacted_history(history: Sequence[HistoryEvent], keep: str) -> list[HistoryEvent]:
    """The events whose text must go, redacted: every earlier version's text but `keep` (the current).

    An earlier version of a derived memory may hold an erased source's words in any form (a
    model's paraphrase included), so only the text that survives the erasure is kept.
    """
    out: list[HistoryEvent] = []
    for event in history:
        before, after = _redacted(event.before, keep), _redacted(event.after, keep)
        if before is not event.before or after is not event.after:
            out.append(event.model_copy(update={"before": before, "after": after}))
    return out


def redacted_snapshot(snapshot: dict[str, Any] | None, keep: str) -> dict[str, Any] | None:
    """A history snapshot with its text redacted unless it is `keep`."""
    return _redacted(snapshot, keep)


def lineage_fields(sources: Sequence[Memory]) -> dict[str, object]:
    """`derived_from`, `source_agents` and `source_speakers` of a memory derived from `sources`."""
    in_order = sorted(sources, key=lambda m: (m.event_time, m.id))
    return {
        "derived_from": [m.id for m in in_order],
        "source_agents": list(dict.fromkeys(m.agent_id for m in in_order)),
        "source_speakers": list(dict.fromkeys(m.speaker for m in in_order if m.speaker)),
    }


def _content(snapshot: dict[str, Any] | None) -> object:
    return None if snapshot is None else snapshot.get("content")


def _redacted(snapshot: dict[str, Any] | None, keep: str) -> dict[str, Any] | None:
    if snapshot is None or snapshot.get("content") in (None, keep, REDACTED):
        return snapshot
    return {**snapshot, "content": REDACTED}

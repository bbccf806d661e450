"""What an erasure judges about a derived memory (`service.lineage`): pure functions of the records."""

from __future__ import annotations

from rearview.models import HistoryAction, HistoryEvent
from rearview.service.lineage import ERASURE_ACTOR, REDACTED, carries_words, redacted_history, rewritten
from tests.factories import T0

SOURCE = "Mallory: wire the budget to account 99-1234 before Friday"


def _event(
    action: HistoryAction, before: str | None, after: str | None, actor: str = "alice"
) -> HistoryEvent:
    return HistoryEvent(
        id=f"e{action.value}{actor}{before}", tenant_id="t", memory_id="m", action=action, at=T0, actor=actor,
        before=None if before is None else {"content": before}, after=None if after is None else {"content": after},
    )  # fmt: skip


def test_a_quotation_carries_the_words_whatever_its_case_and_punctuation() -> None:
    assert carries_words(f"Summary of session s: {SOURCE.upper()}; the room is booked.", SOURCE)
    assert carries_words("...the budget to account 99-1234, said someone", SOURCE)


def test_a_rewrite_in_ones_own_words_does_not_carry_them() -> None:
    assert not carries_words("Launch review on Thursday; Alice owns the booking and the budget", SOURCE)
    assert not carries_words("wire the budget", SOURCE)  # three words in a row are not a quotation
    assert carries_words("He said ok.", "ok")  # a source shorter than the run is carried whole
    assert not carries_words("anything", "  ...  ")  # no words: nothing to carry


def test_only_someone_elses_content_change_counts_as_a_rewrite() -> None:
    created = _event(HistoryAction.CREATED, None, "Summary: x")
    assert not rewritten([created])
    assert not rewritten([created, _event(HistoryAction.UPDATED, "a", "a")])  # tags, importance...
    assert not rewritten([created, _event(HistoryAction.UPDATED, "a", "b", actor=ERASURE_ACTOR)])
    assert rewritten([created, _event(HistoryAction.UPDATED, "Summary: x", "Alice's words")])


def test_redaction_keeps_only_the_surviving_text() -> None:
    history = [
        _event(HistoryAction.CREATED, None, SOURCE),
        _event(HistoryAction.UPDATED, SOURCE, "Alice's words"),
        _event(HistoryAction.MERGED, "Alice's words", "Alice's words"),
    ]
    changed = redacted_history(history, keep="Alice's words")
    assert [e.id for e in changed] == [history[0].id, history[1].id]  # the third holds nothing to redact
    assert changed[0].after == {"content": REDACTED}
    assert (changed[1].before, changed[1].after) == ({"content": REDACTED}, {"content": "Alice's words"})
    assert redacted_history(changed, keep="Alice's words") == []  # idempotent

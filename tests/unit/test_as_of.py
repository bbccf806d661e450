"""`as_of.state_at`: a memory as its history says it was at a time (issue 47, item 3)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from rearview.errors import InvalidInputError
from rearview.models import HistoryAction, MemoryStatus
from rearview.service.history import change_event
from rearview.service.search.as_of import check_as_of, state_at
from tests.factories import T0, make_memory


def _day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def test_the_version_current_then_and_nothing_before_or_after_its_life() -> None:
    born = make_memory("Standup at 09:30", memory_id="m")
    edited = born.model_copy(update={"content": "Standup at 10:00", "version": 2, "updated_at": _day(2)})
    gone = edited.model_copy(update={"status": MemoryStatus.DELETED, "version": 3, "updated_at": _day(4)})
    events = [
        change_event(born, HistoryAction.CREATED, None, T0),
        change_event(edited, HistoryAction.UPDATED, born, _day(2)),
        change_event(gone, HistoryAction.FORGOTTEN, edited, _day(4)),
    ]
    assert state_at(gone, events, T0 - timedelta(seconds=1)) is None
    then = state_at(gone, events, _day(1))
    assert then is not None and then.content == "Standup at 09:30" and then.status is MemoryStatus.ACTIVE
    later = state_at(gone, events, _day(3))
    assert later is not None and later.content == "Standup at 10:00" and later.version == 2
    assert state_at(gone, events, _day(5)) is None


def test_a_memory_whose_expiry_had_passed_was_gone() -> None:
    memory = make_memory("Scratch note", memory_id="m", expires_at=_day(1))
    events = [change_event(memory, HistoryAction.CREATED, None, T0)]
    assert state_at(memory, events, _day(0.5)) is not None
    assert state_at(memory, events, _day(2)) is None


def test_a_time_in_the_future_or_before_the_horizon_names_as_of() -> None:
    check_as_of(_day(-10), T0, 30)
    for bad, says in ((_day(1), "in the future"), (_day(-31), "earliest allowed is 2025-12-02T12:00:00Z")):
        with pytest.raises(InvalidInputError) as err:
            check_as_of(bad, T0, 30)
        assert err.value.field == "as_of" and says in str(err.value)

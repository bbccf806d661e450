"""get / update / forget / history / stats / summarize."""

from __future__ import annotations

import pytest

from rearview.errors import ConflictError, InvalidInputError, NotFoundError
from rearview.models import (
    ForgetRequest,
    HistoryAction,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
    SearchRequest,
    UpdateRequest,
    WriteRequest,
)
from rearview.service.memory_service import MemoryService


def test_update_creates_a_new_version_and_reembeds(service: MemoryService) -> None:
    m = service.write("t1", WriteRequest(content="Standup is at 9:30")).memory
    updated = service.update(
        "t1", UpdateRequest(memory_id=m.id, content="Standup moved to 10:00", importance=4)
    )
    assert updated.version == 2 and updated.content == "Standup moved to 10:00" and updated.importance == 4
    assert service.search("t1", SearchRequest(query="standup 10:00")).results[0].id == m.id
    assert service.search("t1", SearchRequest(query="9:30", channels=("keyword",))).results == []
    event = service.history("t1", m.id).events[-1]
    assert event.action is HistoryAction.UPDATED
    assert event.before is not None and event.before["content"] == "Standup is at 9:30"
    assert event.after is not None and event.after["content"] == "Standup moved to 10:00"


def test_update_guards(service: MemoryService) -> None:
    m = service.write("t1", WriteRequest(content="A")).memory
    with pytest.raises(ConflictError):
        service.update("t1", UpdateRequest(memory_id=m.id, content="B", expected_version=7))
    with pytest.raises(NotFoundError):
        service.update("t2", UpdateRequest(memory_id=m.id, content="B"))
    with pytest.raises(InvalidInputError):
        service.update("t1", UpdateRequest(memory_id=m.id))
    assert service.get("t1", m.id).version == 1


def test_soft_forget_keeps_history_and_leaves_search(service: MemoryService) -> None:
    m = service.write("t1", WriteRequest(content="Temporary password is hunter2")).memory
    result = service.forget("t1", ForgetRequest(ids=[m.id]))
    assert result.forgotten == [m.id] and not result.hard
    assert service.get("t1", m.id).status is MemoryStatus.DELETED
    assert service.search("t1", SearchRequest(query="password")).results == []
    assert service.history("t1", m.id).events[-1].action is HistoryAction.FORGOTTEN


def test_hard_forget_purges_everything(service: MemoryService) -> None:
    m = service.write("t1", WriteRequest(content="Secret detail")).memory
    service.forget("t1", ForgetRequest(ids=[m.id], hard=True))
    with pytest.raises(NotFoundError):
        service.get("t1", m.id)
    with pytest.raises(NotFoundError):
        service.history("t1", m.id)
    assert service.index.count("t1") == 0


def test_forget_by_unknown_id_changes_nothing(service: MemoryService) -> None:
    m = service.write("t1", WriteRequest(content="Keep me")).memory
    with pytest.raises(NotFoundError):
        service.forget("t1", ForgetRequest(ids=[m.id, "01UNKNOWN"]))
    assert service.get("t1", m.id).status is MemoryStatus.ACTIVE
    with pytest.raises(NotFoundError):
        service.forget("t2", ForgetRequest(ids=[m.id]))  # another tenant's id is unknown to you


def test_forget_by_filter_needs_a_criterion(service: MemoryService) -> None:
    for i in range(3):
        service.write("t1", WriteRequest(content=f"scratch {i}", type=MemoryType.WORKING, session_id="s1"))
    keep = service.write("t1", WriteRequest(content="durable fact")).memory
    with pytest.raises(InvalidInputError) as exc:
        service.forget("t1", ForgetRequest(filter=MemoryFilter()))
    assert exc.value.field == "filter"
    result = service.forget("t1", ForgetRequest(filter=MemoryFilter(session_id="s1")))
    assert len(result.forgotten) == 3 and not result.more
    assert service.get("t1", keep.id).status is MemoryStatus.ACTIVE


def test_stats(service: MemoryService) -> None:
    service.write("t1", WriteRequest(content="a", type=MemoryType.EPISODIC))
    service.write("t1", WriteRequest(content="b"))
    stats = service.stats("t1")
    assert stats.total == 2 and stats.by_type == {"episodic": 1, "semantic": 1}
    assert stats.embedding_model == "hashing:256" and stats.index_documents == 2


def test_summarize_session_links_sources(service: MemoryService) -> None:
    ids = [
        service.write(
            "t1", WriteRequest(content=text, type=MemoryType.EPISODIC, session_id="s9", tags=["proj"])
        ).memory.id
        for text in [
            "Reviewed the PR for the cache layer",
            "Found a race in eviction",
            "Fixed eviction with a lock",
        ]
    ]
    result = service.summarize("t1", session_id="s9")
    summary = result.memory
    assert summary.type is MemoryType.EPISODIC and sorted(summary.derived_from) == sorted(ids)
    assert "Found a race in eviction" in summary.content and summary.tags == ["proj"]
    assert summary.content.index("Reviewed") < summary.content.index("Fixed")
    with pytest.raises(InvalidInputError):
        service.summarize("t1", session_id="empty")

"""Agent privacy inside a tenant: a `private` memory exists only for the agent that wrote it.

Every id path answers another agent's private memory exactly as it answers an unknown id, and
changes nothing; every filter path matches only what the caller may see, whatever agent its
filter named; idempotency keys are per agent. Shared memories, and an agent's own private ones,
stay reachable on every path.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from rearview.backends.memory import InMemoryArchive, InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import InvalidInputError, RearviewError
from rearview.models import (
    ForgetRequest,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
    SearchRequest,
    UpdateRequest,
    Visibility,
    WriteAction,
    WriteRequest,
)
from rearview.service.lifecycle import LifecycleConfig, LifecycleService
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.shared.clock import ManualClock
from rearview.shared.ids import new_id
from tests.factories import T0

OWNER, OTHER = "agent-owner", "agent-other"
PRIVATE, SHARED = Visibility.PRIVATE, Visibility.SHARED

IdPath = Callable[[MemoryService, str, str], object]
"""A service call that reaches one memory by id: (service, memory id, calling agent)."""

ID_PATHS: dict[str, IdPath] = {
    "get": lambda s, mid, agent: s.get("t1", mid, agent),
    "history": lambda s, mid, agent: s.history("t1", mid, agent),
    "update": lambda s, mid, agent: s.update(
        "t1", UpdateRequest(memory_id=mid, content="Rewritten by someone", agent_id=agent)
    ),
    "supersede": lambda s, mid, agent: s.write(
        "t1", WriteRequest(content="A correction", supersedes=mid, agent_id=agent)
    ),
    "restore": lambda s, mid, agent: s.restore("t1", mid, agent),
    "forget": lambda s, mid, agent: s.forget("t1", ForgetRequest(ids=[mid], agent_id=agent)),
    "hard forget": lambda s, mid, agent: s.forget("t1", ForgetRequest(ids=[mid], hard=True, agent_id=agent)),
}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def service(clock: ManualClock) -> MemoryService:
    return MemoryService(
        InMemoryMemoryStore(clock), InMemoryMemoryIndex(256), HashingEmbedder(256), clock,
        ServiceConfig(near_duplicate_threshold=1.01), archive=InMemoryArchive(),
    )  # fmt: skip


def remember(
    service: MemoryService,
    visibility: Visibility,
    content: str = "The deploy key lives in vault/ops",
    **kw: object,
) -> str:
    req = WriteRequest.model_validate({"content": content, "visibility": visibility, "agent_id": OWNER, **kw})
    return service.write("t1", req).memory.id


def archive_everything(service: MemoryService, clock: ManualClock) -> None:
    """Let retention archive every importance-1 memory (7 days of life, archived within a day of expiry)."""
    clock.advance(days=6, hours=12)
    config = LifecycleConfig(page_size=50, lookahead=timedelta(days=1))
    lifecycle = LifecycleService(service, InMemoryCheckpointStore(), config)
    assert lifecycle.apply_retention("t1").archived > 0


def refusal(call: Callable[[], object]) -> RearviewError:
    with pytest.raises(RearviewError) as exc:
        call()
    return exc.value


# ------------------------------------------------------------------------------------ id paths


@pytest.mark.parametrize("archived", [False, True], ids=["active", "archived"])
@pytest.mark.parametrize("path", ID_PATHS)
def test_another_agents_private_memory_is_refused_like_an_unknown_id_and_unchanged(
    service: MemoryService, clock: ManualClock, path: str, archived: bool
) -> None:
    private = remember(service, PRIVATE, importance=1)
    if archived:
        archive_everything(service, clock)
    before = service.store.get("t1", private)
    unknown = new_id(clock.now())

    hidden = refusal(lambda: ID_PATHS[path](service, private, OTHER))
    absent = refusal(lambda: ID_PATHS[path](service, unknown, OTHER))

    assert type(hidden) is type(absent)  # neither its existence nor its status shows
    assert str(hidden).replace(private, "<id>") == str(absent).replace(unknown, "<id>")
    assert service.store.get("t1", private) == before
    assert [
        m.id for m in service.store.list_memories("t1", MemoryFilter(statuses=tuple(MemoryStatus))).items
    ] == [private]


@pytest.mark.parametrize("path", [p for p in ID_PATHS if p != "restore"])
@pytest.mark.parametrize(("visibility", "caller"), [(SHARED, OTHER), (PRIVATE, OWNER)])
def test_shared_and_own_private_memories_are_reachable_by_id(
    service: MemoryService, path: str, visibility: Visibility, caller: str
) -> None:
    memory_id = remember(service, visibility)
    ID_PATHS[path](service, memory_id, caller)  # no error


@pytest.mark.parametrize(("visibility", "caller"), [(SHARED, OTHER), (PRIVATE, OWNER)])
def test_shared_and_own_private_archived_memories_can_be_restored(
    service: MemoryService, clock: ManualClock, visibility: Visibility, caller: str
) -> None:
    memory_id = remember(service, visibility, importance=1)
    archive_everything(service, clock)
    assert service.restore("t1", memory_id, caller).memory.status is MemoryStatus.ACTIVE


def test_a_private_write_cannot_retire_a_shared_memory(service: MemoryService) -> None:
    shared = remember(service, SHARED, "The staging host is stage-1", agent_id=OTHER)
    correction = WriteRequest(
        content="The staging host is stage-2", supersedes=shared, visibility=PRIVATE, agent_id=OWNER
    )
    with pytest.raises(InvalidInputError, match="is shared: write its correction as shared"):
        service.write("t1", correction)
    assert service.get("t1", shared, OTHER).status is MemoryStatus.ACTIVE
    as_shared = service.write("t1", correction.model_copy(update={"visibility": SHARED}))
    assert as_shared.superseded_ids == [shared]


def test_forget_by_ids_changes_nothing_when_one_id_is_another_agents_private(service: MemoryService) -> None:
    mine = remember(service, SHARED, "A shared fact", agent_id=OTHER)
    private = remember(service, PRIVATE)
    with pytest.raises(RearviewError):
        service.forget("t1", ForgetRequest(ids=[mine, private], hard=True, agent_id=OTHER))
    assert service.get("t1", mine, OTHER).status is MemoryStatus.ACTIVE


# -------------------------------------------------------------------------------- filter paths


@pytest.fixture
def session(service: MemoryService) -> dict[str, str]:
    """One session's memories: the owner's private one, the owner's shared one, the other's private one."""
    common = {"type": MemoryType.EPISODIC, "session_id": "s1", "tags": ["deploy"]}
    return {
        "owner private": remember(service, PRIVATE, "Owner rotated the deploy key", **common),
        "owner shared": remember(service, SHARED, "Deploy of v2 went fine", **common),
        "other private": remember(
            service, PRIVATE, "Other drafted the deploy notes", agent_id=OTHER, **common
        ),
    }


def test_search_matches_only_what_the_caller_may_see_whatever_agent_the_filter_names(
    service: MemoryService, session: dict[str, str]
) -> None:
    for filter_agent in (None, OWNER):
        req = SearchRequest(query="deploy", filter=MemoryFilter(agent_id=filter_agent), agent_id=OTHER)
        found = {h.id for h in service.search("t1", req).results}
        assert found == {session["owner shared"], session["other private"]}


def test_search_of_archived_memories_matches_only_what_the_caller_may_see(
    service: MemoryService, clock: ManualClock
) -> None:
    private = remember(service, PRIVATE, "Owner's archived deploy note", importance=1)
    shared = remember(service, SHARED, "Everyone's archived deploy note", importance=1)
    archive_everything(service, clock)
    archived = MemoryFilter(statuses=(MemoryStatus.ARCHIVED,))
    hits = service.search("t1", SearchRequest(query="archived deploy note", filter=archived, agent_id=OTHER))
    assert [h.id for h in hits.results] == [shared]
    owner_hits = service.search(
        "t1", SearchRequest(query="archived deploy note", filter=archived, agent_id=OWNER)
    )
    assert {h.id for h in owner_hits.results} == {private, shared}


@pytest.mark.parametrize("hard", [False, True])
def test_forget_by_filter_forgets_only_what_the_caller_may_see(
    service: MemoryService, session: dict[str, str], hard: bool
) -> None:
    flt = MemoryFilter(session_id="s1", agent_id=OWNER)  # naming the owner grants nothing
    result = service.forget("t1", ForgetRequest(filter=flt, hard=hard, agent_id=OTHER))
    assert set(result.forgotten) == {session["owner shared"], session["other private"]}
    assert service.get("t1", session["owner private"], OWNER).status is MemoryStatus.ACTIVE


def test_summarize_reads_only_what_the_caller_may_see(
    service: MemoryService, session: dict[str, str]
) -> None:
    summary = service.summarize("t1", session_id="s1", agent_id=OTHER).memory
    assert set(summary.derived_from) == {session["owner shared"], session["other private"]}
    assert "rotated" not in summary.content


def test_a_summary_of_private_memories_is_private(service: MemoryService, session: dict[str, str]) -> None:
    summary = service.summarize("t1", session_id="s1", agent_id=OTHER).memory
    assert summary.visibility is PRIVATE and summary.agent_id == OTHER
    with pytest.raises(RearviewError):
        service.get("t1", summary.id, OWNER)


def test_a_summary_of_shared_memories_is_shared(service: MemoryService) -> None:
    remember(service, SHARED, "Deploy of v3 went fine", type=MemoryType.EPISODIC, session_id="s2")
    summary = service.summarize("t1", session_id="s2", agent_id=OTHER).memory
    assert summary.visibility is SHARED


def test_summarize_with_only_another_agents_private_sources_is_like_an_empty_session(
    service: MemoryService,
) -> None:
    remember(service, PRIVATE, "Owner's private session note", type=MemoryType.EPISODIC, session_id="s3")
    hidden = refusal(lambda: service.summarize("t1", session_id="s3", agent_id=OTHER))
    empty = refusal(lambda: service.summarize("t1", session_id="nobody", agent_id=OTHER))
    assert str(hidden) == str(empty)


def test_profile_shows_shared_and_own_private_memories_only(service: MemoryService) -> None:
    remember(service, PRIVATE, "Owner's user likes tea")
    remember(service, SHARED, "The user lives in Lyon")
    assert [m.content for m in service.profile("t1", OTHER)] == ["The user lives in Lyon"]
    assert len(service.profile("t1", OWNER)) == 2


# --------------------------------------------------------------------------------- idempotency


@pytest.mark.parametrize("visibility", [PRIVATE, SHARED])
def test_idempotency_keys_are_per_agent(service: MemoryService, visibility: Visibility) -> None:
    def write(agent: str, content: str) -> tuple[WriteAction, bool, str, str]:
        req = WriteRequest(content=content, agent_id=agent, visibility=visibility, idempotency_key="retry-1")
        result = service.write("t1", req)
        return result.action, result.idempotent_replay, result.memory.content, result.memory.agent_id

    assert write(OWNER, "The owner's secret plan") == (
        WriteAction.CREATED,
        False,
        "The owner's secret plan",
        OWNER,
    )
    assert write(OTHER, "Something else") == (WriteAction.CREATED, False, "Something else", OTHER)
    assert write(OTHER, "Something else, retried") == (WriteAction.CREATED, True, "Something else", OTHER)
    assert write(OWNER, "A retry")[1:] == (True, "The owner's secret plan", OWNER)

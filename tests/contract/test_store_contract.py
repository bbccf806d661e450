"""The MemoryStore contract: every store adapter must pass these unchanged."""

from __future__ import annotations

import pytest

from rearview.errors import ConflictError
from rearview.models import (
    SERVICE_CUE_AUTHOR,
    Cue,
    HistoryAction,
    HistoryEvent,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
)
from rearview.ports import MAX_WRITES_PER_COMMIT, MemoryStore, StoreWrite, Touch
from rearview.shared.clock import ManualClock
from tests.factories import T0, created, make_memory, minutes, varied_memories


def test_commit_then_get_round_trips_every_field(store: MemoryStore) -> None:
    m = make_memory(tags=["a", "b"]).model_copy(update={"metadata": {"k": "v", "n": 2, "f": 1.5, "b": True}})
    store.commit([created(m)])
    assert store.get("t1", m.id) == m


def test_recall_cues_round_trip_in_order_with_their_authors(store: MemoryStore) -> None:
    cues = [
        Cue(text="what does Ana drink in the morning?", by="planner"),
        Cue(text='café — 朝のお茶 "quoted"', by=SERVICE_CUE_AUTHOR),
    ]
    m = make_memory("Ana drinks green tea").model_copy(update={"cues": cues})
    store.commit([created(m)])
    got = store.get("t1", m.id)
    assert got == m and got is not None and got.cues == cues
    cleared = m.model_copy(update={"cues": [], "version": 2, "updated_at": T0 + minutes(1)})
    store.commit([StoreWrite(cleared, None, 1)])
    assert store.get("t1", m.id) == cleared  # an update that clears the cues stores none
    assert [x.cues for x in store.get_many("t1", [m.id])] == [[]]


def test_tenants_are_isolated(store: MemoryStore) -> None:
    m = make_memory(tenant_id="t1")
    store.commit([created(m)])
    assert store.get("t2", m.id) is None
    assert store.get_many("t2", [m.id]) == []
    assert store.list_memories("t2", MemoryFilter()).items == []
    assert store.find_by_hash("t2", m.scope_key, m.content_hash) is None
    assert store.history("t2", m.id) == []
    assert store.stats("t2").total == 0
    store.purge("t2", m.id)
    assert store.get("t1", m.id) == m
    assert "t1" in store.tenants() and "t2" not in store.tenants()


def test_insert_of_existing_id_conflicts(store: MemoryStore) -> None:
    m = make_memory()
    store.commit([created(m)])
    with pytest.raises(ConflictError):
        store.commit([created(m)])


def test_stale_version_conflicts_and_nothing_is_written(store: MemoryStore) -> None:
    a, b = make_memory("a"), make_memory("b")
    store.commit([created(a), created(b)])
    a2 = a.model_copy(update={"content": "a2", "version": 2})
    b2 = b.model_copy(update={"content": "b2", "version": 2})
    with pytest.raises(ConflictError):
        store.commit([StoreWrite(a2, None, 1), StoreWrite(b2, None, 7)])
    assert store.get("t1", a.id) == a  # atomic: the valid half did not land
    store.commit([StoreWrite(a2, None, 1)])
    assert store.get("t1", a.id) == a2


def test_a_full_chunk_of_new_memories_commits_whole_or_not_at_all(store: MemoryStore) -> None:
    """What `WriteBatch` commits: `MAX_WRITES_PER_COMMIT` creates, each with history, hash and key."""

    def chunk(prefix: str) -> list[StoreWrite]:
        return [
            created(
                make_memory(f"{prefix} turn {i}: " + "words " * 200, session_id="s1").model_copy(
                    update={"idempotency_key": f"default:ingest:{prefix}{i}"}
                )
            )
            for i in range(MAX_WRITES_PER_COMMIT)
        ]

    first = chunk("a")
    store.commit(first)
    for w in first:
        m = w.memory
        assert (
            store.get("t1", m.id) == m and store.find_by_idempotency_key("t1", m.idempotency_key or "") == m
        )
        assert store.find_by_hash("t1", m.scope_key, m.content_hash) == m
    second = chunk("b")
    second[-1] = created(first[0].memory)  # already stored: the whole chunk conflicts
    with pytest.raises(ConflictError):
        store.commit(second)
    assert store.get_many("t1", [w.memory.id for w in second[:-1]]) == []
    assert store.find_by_idempotency_key("t1", "default:ingest:b0") is None


def test_expired_memories_read_as_absent(store: MemoryStore, clock: ManualClock) -> None:
    m = make_memory(expires_at=T0 + minutes(10))
    store.commit([created(m)])
    assert store.get("t1", m.id) is not None
    clock.advance(minutes=11)
    assert store.get("t1", m.id) is None
    assert store.get_many("t1", [m.id]) == []
    assert store.list_memories("t1", MemoryFilter()).items == []
    assert store.find_by_hash("t1", m.scope_key, m.content_hash) is None
    assert store.stats("t1").total == 0


def test_list_expired_hands_the_archive_job_what_the_store_still_holds(
    store: MemoryStore, clock: ManualClock
) -> None:
    """Embedded stores keep expired records until the job sweeps them; DynamoDB's TTL + stream do it."""
    soon, later, never = (make_memory(expires_at=T0 + minutes(m)) for m in (5, 10, 600))
    store.commit([created(soon), created(later), created(never), created(make_memory(tenant_id="t2",
                  expires_at=T0 + minutes(5)))])  # fmt: skip
    assert store.list_expired("t1") == []
    clock.advance(minutes=11)
    expired = [m.id for m in store.list_expired("t1")]
    deletes_itself = type(store).__name__.startswith("DynamoDB")
    assert expired == ([] if deletes_itself else [soon.id, later.id])
    assert [m.id for m in store.list_expired("t1", limit=1)] == expired[:1]


def test_find_by_hash_only_active_in_scope(store: MemoryStore) -> None:
    m = make_memory(scope_key="s1")
    old = make_memory("User prefers tea", scope_key="s1", status=MemoryStatus.SUPERSEDED)
    store.commit([created(old), created(m)])
    assert store.find_by_hash("t1", "s1", m.content_hash) == m
    assert store.find_by_hash("t1", "s2", m.content_hash) is None


def test_find_by_hash_of_one_writer_finds_only_its_memory(store: MemoryStore) -> None:
    """Issue 45.4: a write merges only into its own writer's duplicate; another's copy is not one."""
    mallorys = make_memory(agent_id="mallory", at=T0)
    alices = make_memory(agent_id="alice", at=T0 + minutes(1))
    store.commit([created(mallorys)])
    assert store.find_by_hash("t1", mallorys.scope_key, mallorys.content_hash, agent_id="alice") is None
    store.commit([created(alices)])
    for writer, own in (("alice", alices), ("mallory", mallorys)):
        assert store.find_by_hash("t1", own.scope_key, own.content_hash, agent_id=writer) == own
    assert store.find_by_hash("t1", alices.scope_key, alices.content_hash) in (alices, mallorys)


def test_find_by_idempotency_key(store: MemoryStore) -> None:
    m = make_memory().model_copy(update={"idempotency_key": "k-1"})
    store.commit([created(m)])
    assert store.find_by_idempotency_key("t1", "k-1") == m
    assert store.find_by_idempotency_key("t1", "k-2") is None
    assert store.find_by_idempotency_key("t2", "k-1") is None


def test_find_by_idempotency_keys_answers_many_keys_at_once(store: MemoryStore, clock: ManualClock) -> None:
    keyed = [make_memory(f"m{i}").model_copy(update={"idempotency_key": f"k-{i}"}) for i in range(130)]
    short = make_memory("short-lived", at=T0).model_copy(
        update={"idempotency_key": "k-short", "expires_at": T0 + minutes(5)}
    )
    store.commit([created(m) for m in keyed[:MAX_WRITES_PER_COMMIT]])
    for start in range(MAX_WRITES_PER_COMMIT, len(keyed), MAX_WRITES_PER_COMMIT):
        store.commit([created(m) for m in keyed[start : start + MAX_WRITES_PER_COMMIT]])
    store.commit([created(short)])
    asked = [f"k-{i}" for i in range(0, 130, 3)] + ["k-absent", "k-0", "k-short"]  # a repeat, >100 keys
    found = store.find_by_idempotency_keys("t1", asked)
    assert found == {f"k-{i}": keyed[i] for i in range(0, 130, 3)} | {"k-short": short}
    assert found["k-0"] == store.find_by_idempotency_key("t1", "k-0")
    assert (
        store.find_by_idempotency_keys("t2", asked) == {} and store.find_by_idempotency_keys("t1", []) == {}
    )
    clock.advance(minutes=10)  # expired: absent, as for one key
    assert "k-short" not in store.find_by_idempotency_keys("t1", ["k-short", "k-1"])


def test_list_pages_newest_first_without_gaps_or_repeats(store: MemoryStore) -> None:
    memories = [make_memory(f"m{i}", at=T0 + minutes(i)) for i in range(23)]
    store.commit([created(m) for m in memories[:12]])
    store.commit([created(m) for m in memories[12:]])
    seen, cursor = [], None
    while True:
        page = store.list_memories("t1", MemoryFilter(), cursor=cursor, limit=5)
        assert len(page.items) <= 5
        seen += [m.id for m in page.items]
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == [m.id for m in reversed(memories)]


@pytest.mark.parametrize(
    "flt",
    [MemoryFilter(), MemoryFilter(types=(MemoryType.SEMANTIC, MemoryType.EPISODIC))],
    ids=["one-partition", "merged-partitions"],
)
def test_list_pages_oldest_first_without_gaps_or_repeats(store: MemoryStore, flt: MemoryFilter) -> None:
    kinds = (MemoryType.SEMANTIC, MemoryType.EPISODIC)
    memories = [make_memory(f"m{i}", type=kinds[i % 2], at=T0 + minutes(i)) for i in range(23)]
    store.commit([created(m) for m in memories[:12]])
    store.commit([created(m) for m in memories[12:]])
    seen, cursor = [], None
    while True:
        page = store.list_memories("t1", flt, cursor=cursor, limit=5, oldest_first=True)
        assert len(page.items) == 5 or page.cursor is None  # full pages until the end
        seen += [m.id for m in page.items]
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == [m.id for m in memories]


def test_list_applies_every_filter_like_the_reference(store: MemoryStore) -> None:
    rows = varied_memories()
    # A commit is one transaction: keep it within DynamoDB's 100 actions.
    for start in range(0, len(rows), 20):
        store.commit([created(m) for m in rows[start : start + 20]])
    filters = [
        MemoryFilter(),
        MemoryFilter(agent_id="agent1"),
        MemoryFilter(session_id="s2", types=(MemoryType.EPISODIC, MemoryType.SEMANTIC)),
        MemoryFilter(tags=("x", "y")),
        MemoryFilter(time_from=T0 + minutes(70), time_to=T0 + minutes(90)),
        MemoryFilter(statuses=(MemoryStatus.SUPERSEDED,), agent_id="agent0"),
        MemoryFilter(scope_key="scope1", statuses=(MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)),
    ]
    for flt in filters:
        got = {m.id for m in store.list_memories("t1", flt, limit=100).items}
        assert got == {m.id for m in rows if flt.matches(m)}, flt


def test_history_is_appended_in_order(store: MemoryStore) -> None:
    m = make_memory()
    store.commit([created(m)])
    m2 = m.model_copy(update={"content": "User prefers coffee", "version": 2, "updated_at": T0 + minutes(1)})
    event = HistoryEvent(
        id="01ZZZZZZZZZZZZZZZZZZZZZZZZ",
        tenant_id="t1",
        memory_id=m.id,
        action=HistoryAction.UPDATED,
        at=T0 + minutes(1),
        before={"content": m.content},
        after={"content": m2.content},
    )
    store.commit([StoreWrite(m2, event, 1)])
    history = store.history("t1", m.id)
    assert [e.action for e in history] == [HistoryAction.CREATED, HistoryAction.UPDATED]
    assert history[1] == event


def test_touch_records_recall_without_new_version(store: MemoryStore) -> None:
    m = make_memory()
    store.commit([created(m)])
    store.touch("t1", [Touch(m.id, 1.3, T0 + minutes(5), 4), Touch("missing", 1.0, T0, 1)])
    got = store.get("t1", m.id)
    assert got is not None
    assert (got.strength, got.last_accessed_at, got.access_count, got.version) == (1.3, T0 + minutes(5), 4, 1)


def test_a_touch_older_than_the_recall_held_changes_nothing(store: MemoryStore) -> None:
    m = make_memory()
    store.commit([created(m)])
    store.touch("t1", [Touch(m.id, 1.3, T0 + minutes(5), 4)])
    store.touch("t1", [Touch(m.id, 0.9, T0 + minutes(2), 5)])  # a late search's older recall
    store.touch("t1", [Touch(m.id, 0.8, T0 + minutes(5), 4)])  # the same recall again
    got = store.get("t1", m.id)
    assert got is not None and (got.strength, got.last_accessed_at, got.access_count) == (
        1.3,
        T0 + minutes(5),
        4,
    )
    store.touch("t1", [Touch(m.id, 1.2, T0 + minutes(5), 5)])  # same instant, one recall more
    got = store.get("t1", m.id)
    assert got is not None and (got.strength, got.access_count) == (1.2, 5)


def test_every_read_returns_the_recall_a_touch_recorded(store: MemoryStore, clock: ManualClock) -> None:
    m = make_memory(session_id="s1").model_copy(update={"idempotency_key": "k"})
    store.commit([created(m)])
    store.touch("t1", [Touch(m.id, 1.4, T0 + minutes(5), 1)])
    recalled = (1.4, T0 + minutes(5), 1)
    clock.advance(minutes=10)
    reads = [
        store.get("t1", m.id),
        *store.get_many("t1", [m.id]),
        store.find_by_hash("t1", m.scope_key, m.content_hash),
        store.find_by_idempotency_key("t1", "k"),
        *store.list_memories("t1", MemoryFilter()).items,
        *store.list_memories("t1", MemoryFilter(session_id="s1")).items,
        *store.list_memories("t1", MemoryFilter(types=(MemoryType.SEMANTIC,))).items,
        *store.list_due("t1", "decay", T0 + minutes(10)).items,
    ]
    assert [(r.strength, r.last_accessed_at, r.access_count) if r else None for r in reads] == [recalled] * 8


def test_get_many_without_recalls_returns_each_memory_as_of_its_last_commit(store: MemoryStore) -> None:
    """What reconcile reads: every memory, version and status; the recall fields may be the commit's."""
    kept, retired = make_memory("kept"), make_memory("retired")
    store.commit([created(kept), created(retired)])
    gone = retired.model_copy(update={"status": MemoryStatus.DELETED, "version": 2})
    store.commit([StoreWrite(gone, None, 1)])
    store.touch("t1", [Touch(kept.id, 1.4, T0 + minutes(5), 1)])
    got = store.get_many("t1", [kept.id, retired.id, "missing"], recalls=False)
    assert sorted((m.id, m.version, m.status) for m in got) == sorted(
        [(kept.id, 1, MemoryStatus.ACTIVE), (retired.id, 2, MemoryStatus.DELETED)]
    )
    assert {m.id: m.access_count for m in got}[kept.id] in (0, 1)  # 1 where recalls live in the row


def test_a_commit_keeps_the_recall_its_writer_read_and_a_later_one_wins(store: MemoryStore) -> None:
    m = make_memory()
    store.commit([created(m)])
    store.touch("t1", [Touch(m.id, 1.4, T0 + minutes(5), 1)])
    read = store.get("t1", m.id)
    assert read is not None
    tagged = read.model_copy(update={"tags": ["x"], "version": 2, "updated_at": T0 + minutes(6)})
    store.commit([StoreWrite(tagged, None, 1)])
    assert store.get("t1", m.id) == tagged  # the recall it read, kept
    merged = tagged.model_copy(
        update={
            "strength": 1.9,
            "last_accessed_at": T0 + minutes(7),
            "version": 3,
            "updated_at": T0 + minutes(7),
        }
    )
    store.commit([StoreWrite(merged, None, 2)])  # a merge reinforces it: a later recall than the touch's
    assert store.get("t1", m.id) == merged
    store.touch("t1", [Touch(m.id, 2.0, T0 + minutes(8), 2)])
    got = store.get("t1", m.id)
    assert got is not None and (got.strength, got.access_count, got.version) == (2.0, 2, 3)


def test_purge_removes_memory_and_history(store: MemoryStore) -> None:
    m = make_memory().model_copy(update={"idempotency_key": "k"})
    store.commit([created(m)])
    store.purge("t1", m.id)
    store.purge("t1", m.id)  # idempotent
    assert store.get("t1", m.id) is None
    assert store.history("t1", m.id) == []
    assert store.find_by_hash("t1", m.scope_key, m.content_hash) is None
    assert store.find_by_idempotency_key("t1", "k") is None


def test_stats_counts_by_type_and_status(store: MemoryStore) -> None:
    store.commit(
        [
            created(make_memory("a", type=MemoryType.EPISODIC)),
            created(make_memory("b", type=MemoryType.EPISODIC, status=MemoryStatus.DELETED)),
            created(make_memory("c", type=MemoryType.PROCEDURAL, at=T0 + minutes(3))),
        ]
    )
    stats = store.stats("t1")
    assert stats.total == 3
    assert stats.by_type == {"episodic": 2, "procedural": 1}
    assert stats.by_status == {"active": 2, "deleted": 1}
    assert (stats.oldest, stats.newest) == (T0, T0 + minutes(3))


def test_lineage_finds_every_memory_derived_from_a_source_and_ends_with_it(store: MemoryStore) -> None:
    sources = [make_memory(content=f"Source statement {i}") for i in range(3)]
    store.commit([created(m) for m in sources])
    summary = make_memory(content="Summary of sources").model_copy(
        update={"derived_from": [m.id for m in sources]}
    )
    fact = make_memory(content="A fact").model_copy(update={"derived_from": [sources[0].id]})
    store.commit([created(summary), created(fact)])
    store.commit([created(make_memory(tenant_id="t2").model_copy(update={"derived_from": [sources[0].id]}))])
    assert sorted(store.derived_ids("t1", sources[0].id)) == sorted([summary.id, fact.id])
    assert store.derived_ids("t1", sources[2].id) == [summary.id]
    assert store.derived_ids("t1", summary.id) == []
    relinked = summary.model_copy(update={"derived_from": [sources[1].id], "version": 2})
    store.commit([StoreWrite(relinked, None, 1)])  # a lineage may name a memory that moved on: check it
    assert summary.id in store.derived_ids("t1", sources[2].id)
    store.purge("t1", sources[0].id)
    assert store.derived_ids("t1", sources[0].id) == []
    store.purge("t1", summary.id)
    assert store.derived_ids("t1", sources[1].id) == []
    assert store.get("t1", fact.id) is not None  # purging a source forgets its lineage, not what it fed


def test_rewrite_history_replaces_only_the_named_events(store: MemoryStore) -> None:
    m = make_memory()
    store.commit([created(m)])
    m2 = m.model_copy(update={"content": "User prefers coffee", "version": 2, "updated_at": T0 + minutes(1)})
    update = HistoryEvent(
        id="01ZZZZZZZZZZZZZZZZZZZZZZZZ", tenant_id="t1", memory_id=m.id, action=HistoryAction.UPDATED,
        at=T0 + minutes(1), before={"content": m.content}, after={"content": m2.content},
    )  # fmt: skip
    store.commit([StoreWrite(m2, update, 1)])
    first = store.history("t1", m.id)[0]
    redacted = first.model_copy(update={"after": {"content": "[erased]"}, "note": "redacted"})
    store.rewrite_history("t1", m.id, [redacted, redacted.model_copy(update={"id": "unknown"})])
    store.rewrite_history("t1", m.id, [redacted])  # idempotent
    assert store.history("t1", m.id) == [redacted, update]

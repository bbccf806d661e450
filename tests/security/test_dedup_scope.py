"""A write never merges into a memory its writer may not see (issue 24, item 4).

The dedup scope key was `type/visibility/agent/session` with nothing escaped: agent `x` in session
`y/z` and agent `x/y` in session `z` shared a key, so the first one's working note merged into the
second one's *private* memory, got back its id and content, and added its tag to it. Now keys are
escaped (`rearview.shared.scopes`), every dedup candidate is re-checked against the writer's own scope and
visibility, and stores written before are migrated (SQLite) or re-keyed on read (the others).
Checked on every store (in-memory, SQLite, DynamoDB on moto).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rearview.backends.memory import InMemoryMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import (
    HistoryAction,
    HistoryEvent,
    Memory,
    MemoryType,
    Visibility,
    WriteAction,
    WriteRequest,
)
from rearview.ports import MemoryStore, StoreWrite
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from rearview.shared.scopes import legacy_scope_key, scope_key
from tests.contract.conftest import STORES
from tests.factories import T0, make_memory
from tests.sqlite_schemas import older_store

TENANT = "t1"
SECRET = "The vault key is in the second drawer"


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    s = STORES[request.param](ManualClock(T0), tmp_path, request)
    s.ensure_schema()
    yield s


def _service(store: MemoryStore) -> MemoryService:
    clock = ManualClock(T0)
    return MemoryService(store, InMemoryMemoryIndex(256), HashingEmbedder(256), clock)


def _working(agent: str, session: str, tags: list[str] | None = None) -> WriteRequest:
    return WriteRequest(
        content=SECRET,
        type=MemoryType.WORKING,
        visibility=Visibility.PRIVATE,
        agent_id=agent,
        session_id=session,
        tags=tags or [],
    )


def test_scope_keys_are_unambiguous() -> None:
    working, private = MemoryType.WORKING, Visibility.PRIVATE
    assert scope_key(working, private, "x", "y/z") != scope_key(working, private, "x/y", "z")
    assert scope_key(working, private, "x\\", "/z") != scope_key(working, private, "x\\/", "z")
    assert scope_key(working, private, "x", "-") != scope_key(working, private, "x", None)
    # Keys of ids without `/`, a backslash or a lone `-` are unchanged: nothing else needs re-keying.
    assert scope_key(working, private, "agent-1", "s1") == legacy_scope_key(working, private, "agent-1", "s1")


def test_slash_ids_do_not_merge_into_another_agents_private_memory(store: MemoryStore) -> None:
    service = _service(store)
    victim = service.write(TENANT, _working("x/y", "z")).memory
    attack = service.write(TENANT, _working("x", "y/z", tags=["pwned"]))

    assert attack.action is WriteAction.CREATED
    assert attack.memory.id != victim.id
    after = store.get(TENANT, victim.id)
    assert after is not None
    assert (after.version, after.tags, after.agent_id) == (1, [], "x/y")


def _plant(store: MemoryStore, memory: Memory) -> None:
    event = HistoryEvent(
        id=f"{memory.id}-created", tenant_id=TENANT, memory_id=memory.id,
        action=HistoryAction.CREATED, at=T0, actor=memory.agent_id,
    )  # fmt: skip
    store.commit([StoreWrite(memory, event, None)])


def _victim(key: str) -> Memory:
    """Agent `x/y`'s private working memory in session `z`, stored under `key`."""
    return make_memory(
        SECRET, tenant_id=TENANT, memory_id="victim", type=MemoryType.WORKING,
        agent_id="x/y", visibility=Visibility.PRIVATE, session_id="z", scope_key=key,
    )  # fmt: skip


def test_a_memory_stored_under_a_colliding_legacy_key_is_not_merged_into(store: MemoryStore) -> None:
    """A store written before the keys were escaped: the victim sits under the key the attacker's
    write had then. The write looks duplicates up under that legacy key too (re-keyed on read),
    and refuses the candidate: not in its scope, not visible to it."""
    colliding = legacy_scope_key(MemoryType.WORKING, Visibility.PRIVATE, "x", "y/z")
    assert colliding == legacy_scope_key(MemoryType.WORKING, Visibility.PRIVATE, "x/y", "z")
    _plant(store, _victim(colliding))

    attack = _service(store).write(TENANT, _working("x", "y/z", tags=["pwned"]))

    assert attack.action is WriteAction.CREATED
    assert attack.memory.id != "victim"
    after = store.get(TENANT, "victim")
    assert after is not None and (after.version, after.tags) == (1, [])


def test_visibility_is_rechecked_on_every_dedup_candidate(store: MemoryStore) -> None:
    """Even a candidate stored under exactly the writer's key (a forged or corrupt row) is refused."""
    key = scope_key(MemoryType.WORKING, Visibility.PRIVATE, "x", "s1")
    _plant(store, _victim(key))

    attack = _service(store).write(TENANT, _working("x", "s1"))

    assert attack.action is WriteAction.CREATED
    assert SECRET in attack.memory.content and attack.memory.id != "victim"


def test_an_own_legacy_keyed_memory_is_still_merged_and_re_keyed(store: MemoryStore) -> None:
    """Re-keyed on read: the writer's own memory under its legacy key is its duplicate, and the
    merge stores the new key, so the next lookup finds it directly."""
    legacy = legacy_scope_key(MemoryType.WORKING, Visibility.PRIVATE, "x", "y/z")
    own = make_memory(
        SECRET, tenant_id=TENANT, memory_id="own", type=MemoryType.WORKING,
        agent_id="x", visibility=Visibility.PRIVATE, session_id="y/z", scope_key=legacy,
    )  # fmt: skip
    _plant(store, own)

    merged = _service(store).write(TENANT, _working("x", "y/z"))

    assert (merged.action, merged.merged_into) == (WriteAction.MERGED, "own")
    after = store.get(TENANT, "own")
    assert after is not None
    assert after.scope_key == scope_key(MemoryType.WORKING, Visibility.PRIVATE, "x", "y/z")


def test_the_sqlite_store_migrates_ambiguous_keys(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    legacy = legacy_scope_key(MemoryType.WORKING, Visibility.PRIVATE, "x/y", "z")
    planted = [_victim(legacy), make_memory("plain", tenant_id=TENANT, memory_id="plain")]
    older_store(path, 1, planted)  # the schema as it was before the keys were escaped

    store = SQLiteMemoryStore(path)
    store.ensure_schema()
    victim, plain = store.get(TENANT, "victim"), store.get(TENANT, "plain")
    assert victim is not None and plain is not None
    assert victim.scope_key == scope_key(MemoryType.WORKING, Visibility.PRIVATE, "x/y", "z") != legacy
    assert plain.scope_key == "semantic/shared/*/*"
    assert store.find_by_hash(TENANT, victim.scope_key, victim.content_hash) == victim

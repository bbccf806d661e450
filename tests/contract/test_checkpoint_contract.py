"""The CheckpointStore contract: every checkpoint adapter must pass these unchanged."""

from __future__ import annotations

import json

from rearview.ports import CheckpointStore


def test_nothing_saved_loads_as_none(checkpoints: CheckpointStore) -> None:
    assert checkpoints.load("t1", "decay") is None


def test_save_then_load_returns_the_state_exactly(checkpoints: CheckpointStore) -> None:
    state = json.dumps({"phase": 2, "cursor": "eyJ2IjogMX0=", "note": "Ünïcode — 记忆 #1 %23"})
    checkpoints.save("t1", "decay", state)
    assert checkpoints.load("t1", "decay") == state


def test_save_replaces_the_previous_state_whole(checkpoints: CheckpointStore) -> None:
    checkpoints.save("t1", "archive", '{"phase": 0, "cursor": "a"}')
    checkpoints.save("t1", "archive", '{"phase": 1}')
    assert checkpoints.load("t1", "archive") == '{"phase": 1}'


def test_each_tenant_and_job_has_its_own_state(checkpoints: CheckpointStore) -> None:
    checkpoints.save("t1", "decay", "t1-decay")
    checkpoints.save("t1", "archive", "t1-archive")
    checkpoints.save("t2", "decay", "t2-decay")
    assert checkpoints.load("t1", "decay") == "t1-decay"
    assert checkpoints.load("t1", "archive") == "t1-archive"
    assert checkpoints.load("t2", "decay") == "t2-decay"
    assert checkpoints.load("t2", "archive") is None


def test_separators_in_names_cannot_reach_another_checkpoint(checkpoints: CheckpointStore) -> None:
    checkpoints.save("a#JOB#b", "c", "first")
    checkpoints.save("a", "b#JOB#c", "second")
    checkpoints.save("a%23JOB%23b", "c", "third")
    assert checkpoints.load("a#JOB#b", "c") == "first"
    assert checkpoints.load("a", "b#JOB#c") == "second"
    assert checkpoints.load("a%23JOB%23b", "c") == "third"


def test_delete_forgets_one_state_and_is_idempotent(checkpoints: CheckpointStore) -> None:
    checkpoints.save("t1", "decay", "gone soon")
    checkpoints.save("t1", "reconcile", "kept")
    checkpoints.delete("t1", "decay")
    checkpoints.delete("t1", "decay")
    checkpoints.delete("t9", "never-saved")
    assert checkpoints.load("t1", "decay") is None
    assert checkpoints.load("t1", "reconcile") == "kept"


def test_ensure_schema_is_idempotent_and_keeps_saved_states(checkpoints: CheckpointStore) -> None:
    checkpoints.save("t1", "decay", "kept")
    checkpoints.ensure_schema()
    assert checkpoints.load("t1", "decay") == "kept"

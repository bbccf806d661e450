"""The lifecycle load scenario: N memories through decay + archive, audited after every round.

One tenant is bulk-loaded with N synthetic memories (store.commit + index.upsert in batches, as
`rearview import` would): types, importance 1-5 and ages drawn so that none has expired yet, a
third of them recalled lately (higher anchored strength, recent last access). Then, at the same
instant, `decay` and `archive` (retention, 36 h lookahead, as deployed) run once (the timed round:
a `full` scan, which builds the due order), once more (nothing left to do: the idempotent re-run),
a day later and a week later (`due` scans: only what is due is read). After every round the
count of memories still in the hot store (active) plus the memories held by the archive must
equal N, every archived stub must point at an archive object holding its memory, and no memory
may be in the archive twice.

Each job's reads are counted (`CountingStore`: the memories the store hands the job) against what
is due, counted out of band before the round: for `decay`, the memories that have faded plus those
written since its last run (each write is examined once); for `archive`, those expiring within
the look-ahead. With a `budget_s`, each job runs as Lambda runs it: invocations of at most that
many seconds, each resuming from the checkpoint, until the job is complete.

`sqlite` is the embedded backend (SQLite store + SQLite index + directory archive); `dynamodb`
runs the DynamoDB store and the S3 archive on moto (in-process mocks), with the table and bucket
built from template.yaml. Used by `tests/integration/test_lifecycle_load.py` (the assertions)
and `benchmarks/speed/lifecycle_load.py` (the timings); it lives under tests/ so no test imports a
benchmark.
"""

from __future__ import annotations

import gzip
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rearview.backends.local_archive import DirectoryArchive
from rearview.backends.memory import InMemoryMemoryIndex
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.backends.sqlite_checkpoints import SQLiteCheckpointStore
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import (
    HistoryAction,
    HistoryEvent,
    Memory,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
    Page,
    Visibility,
)
from rearview.ports import (
    Archive,
    CheckpointStore,
    DueAt,
    DueJob,
    IndexDocument,
    MemoryIndex,
    MemoryStore,
    StoreWrite,
)
from rearview.service.lifecycle import Deadline, JobReport, LifecycleConfig, LifecycleService
from rearview.service.lifecycle.rules import RetentionRule
from rearview.service.lifecycle.runner import JobState
from rearview.service.memory_service import MemoryService, scope_key
from rearview.service.policy import DEFAULT_DECAY, DEFAULT_RETENTION
from rearview.shared.clock import ManualClock
from rearview.shared.ids import new_id
from rearview.text import content_hash

TENANT = "load"
NOW = datetime.fromisoformat("2026-06-01T00:00:00+00:00")
DIMENSION = 64
TYPES = [
    (MemoryType.SEMANTIC, 50),
    (MemoryType.EPISODIC, 30),
    (MemoryType.PROCEDURAL, 15),
    (MemoryType.WORKING, 5),
]
IMPORTANCE = [(1, 20), (2, 20), (3, 30), (4, 20), (5, 10)]
WORDS = [
    "deploy",
    "cache",
    "schema",
    "token",
    "invoice",
    "latency",
    "retry",
    "backup",
    "region",
    "quota",
    "alert",
    "branch",
    "review",
    "migration",
    "index",
    "vector",
    "tenant",
    "budget",
    "laptop",
    "printer",
    "meeting",
    "lunch",
    "editor",
    "keyboard",
    "python",
    "rust",
]


@dataclass
class Backend:
    """Everything a run needs, plus how to read an archive object's raw bytes (for exact counting)."""

    store: MemoryStore
    index: MemoryIndex
    archive: Archive
    checkpoints: CheckpointStore
    read_object: Callable[[str], bytes]
    commit_batch: int


@dataclass
class Round:
    label: str
    seconds: dict[str, float] = field(default_factory=dict)
    archived: dict[str, int] = field(default_factory=dict)
    renewed: int = 0
    hot: int = 0
    in_archive: int = 0
    read: dict[str, int] = field(default_factory=dict)
    """Memories the store handed each job (list, due listing, get, get_many)."""
    due: dict[str, int] = field(default_factory=dict)
    """What each job had to examine, counted out of band before the round (module docstring)."""
    scan: dict[str, str] = field(default_factory=dict)
    invocations: dict[str, int] = field(default_factory=dict)
    """Budgeted runs each job took (more than 1: it stopped at its budget and resumed)."""


class CountingStore:
    """A `MemoryStore` that counts the memories its reads return; everything else passes through."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self.read = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    def _count(self, items: list[Memory]) -> list[Memory]:
        self.read += len(items)
        return items

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        found = self._store.get(tenant_id, memory_id)
        self.read += found is not None
        return found

    def get_many(self, tenant_id: str, memory_ids: Sequence[str], *, recalls: bool = True) -> list[Memory]:
        return self._count(self._store.get_many(tenant_id, memory_ids, recalls=recalls))

    def list_memories(self, tenant_id: str, filter: MemoryFilter, *args: Any, **kw: Any) -> Page:
        page = self._store.list_memories(tenant_id, filter, *args, **kw)
        self._count(page.items)
        return page

    def list_due(self, tenant_id: str, job: DueJob, before: datetime, *args: Any, **kw: Any) -> Page:
        page = self._store.list_due(tenant_id, job, before, *args, **kw)
        self._count(page.items)
        return page

    def list_expired(self, tenant_id: str, limit: int = 100) -> list[Memory]:
        return self._count(self._store.list_expired(tenant_id, limit))


# ------------------------------------------------------------------------------ backends


@contextmanager
def sqlite_backend(workdir: Path) -> Iterator[Backend]:
    clock = ManualClock(NOW)
    archive = DirectoryArchive(workdir / "archive", clock=clock)
    yield Backend(
        SQLiteMemoryStore(workdir / "memories.sqlite3", clock),
        SQLiteMemoryIndex(workdir / "index.sqlite3", DIMENSION),
        archive,
        SQLiteCheckpointStore(workdir / "lifecycle.sqlite3"),
        lambda ref: (archive.root / ref).read_bytes(),
        commit_batch=200,
    )


@contextmanager
def moto_without_transaction_backups() -> Iterator[None]:
    """moto deep-copies the whole table before every TransactWriteItems (to roll back a failed one):
    quadratic in the table size. For a load run, where no transaction fails (checked: every job
    reports no conflict), the copy is skipped: a failed transaction would not be rolled back."""
    import copy as copy_module

    from moto.dynamodb import models as dynamodb_models
    from moto.dynamodb.models.table import Table

    class _NoTableCopy:
        @staticmethod
        def deepcopy(obj: object, memo: dict[int, object] | None = None) -> object:
            return obj if isinstance(obj, Table) else copy_module.deepcopy(obj, memo)

    dynamodb_models.copy = _NoTableCopy  # type: ignore[assignment]
    try:
        yield
    finally:
        dynamodb_models.copy = copy_module  # type: ignore[assignment]


@contextmanager
def dynamodb_backend(workdir: Path) -> Iterator[Backend]:
    """DynamoDB store + S3 archive on moto, built from template.yaml (needs the dev extras)."""
    import boto3
    from moto import mock_aws

    from rearview.backends.dynamodb import DynamoDBMemoryStore
    from rearview.backends.s3_archive import S3Archive
    from tests.fixtures.aws import REGION, create_table_kwargs, resource_properties

    with fake_aws_credentials(REGION), mock_aws(), moto_without_transaction_backups():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        kwargs = create_table_kwargs(resource_properties("MemoryTable"))
        dynamodb.create_table(**kwargs)
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="rearview-load")
        clock = ManualClock(NOW)
        yield Backend(
            DynamoDBMemoryStore(kwargs["TableName"], dynamodb, clock=clock),
            InMemoryMemoryIndex(DIMENSION),
            S3Archive("rearview-load", client=s3, clock=clock),
            InMemoryCheckpointStore(),
            lambda ref: s3.get_object(Bucket="rearview-load", Key=ref)["Body"].read(),
            commit_batch=20,
        )


@contextmanager
def fake_aws_credentials(region: str) -> Iterator[None]:
    """Fake credentials for moto, the environment restored afterwards (nothing can reach AWS)."""
    import os

    fake = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }
    fake["AWS_DEFAULT_REGION"] = region
    saved = {name: os.environ.get(name) for name in fake}
    os.environ.update(fake)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


BACKENDS = {"sqlite": sqlite_backend, "dynamodb": dynamodb_backend}


# ---------------------------------------------------------------------------------- seed


def synthetic(i: int, rng: random.Random) -> Memory:
    """Memory number i: alive at NOW (written within its retention), a third recalled lately."""
    memory_type = rng.choices([t for t, _ in TYPES], [w for _, w in TYPES])[0]
    importance = rng.choices([i for i, _ in IMPORTANCE], [w for _, w in IMPORTANCE])[0]
    days = DEFAULT_RETENTION.days_for(memory_type, importance)
    written = NOW - timedelta(days=rng.uniform(0, min(150.0, (days or 150.0) * 0.999)))
    recalled = rng.random() < 0.33
    last_access = max(written, NOW - timedelta(days=rng.uniform(0, 10))) if recalled else written
    content = f"{' '.join(rng.sample(WORDS, 6))} (note {i})"
    # Sessions as an agent writes them, a run of consecutive memories (~10 working ones each at any N);
    # `i % 50` made 50 sessions whatever N (1,000 working memories each at 1M), and archiving re-reads
    # up to 1,000 session neighbours per session per page: a conversation that size is not a session.
    session = f"s{i // 200}" if memory_type is MemoryType.WORKING else None
    recalls = rng.randint(1, 10) if recalled else 0
    return Memory(
        id=new_id(written),
        tenant_id=TENANT,
        type=memory_type,
        content=content,
        agent_id="default",
        session_id=session,
        importance=importance,
        strength=1.0 + 0.1 * recalls,
        access_count=recalls,
        created_at=written,
        updated_at=written,
        event_time=written,
        last_accessed_at=last_access,
        expires_at=DEFAULT_RETENTION.expires_at(memory_type, importance, None, written),
        content_hash=content_hash(content),
        embedding_model=f"hashing:{DIMENSION}",
        scope_key=scope_key(memory_type, Visibility.SHARED, "default", session),
    )


def seed(
    backend: Backend, n: int, rng: random.Random, *, index: bool = True, established: bool = False
) -> list[str]:
    """Write `n` synthetic memories in chunks (never all in memory at once); their ids.

    `index` False leaves the index empty (the jobs' index deletes then find nothing); `established`
    also schedules each memory's decay as a deployment whose due order was built long ago has it.
    """
    embedder = HashingEmbedder(DIMENSION)
    ids: list[str] = []
    for start in range(0, n, backend.commit_batch):
        chunk = [synthetic(i, rng) for i in range(start, min(n, start + backend.commit_batch))]
        backend.store.commit([StoreWrite(m, created_event(m), None) for m in chunk])
        if index:
            vectors = embedder.embed_documents([m.content for m in chunk])
            backend.index.upsert([IndexDocument(m, vectors[j]) for j, m in enumerate(chunk)])
        if established:
            backend.store.schedule(TENANT, [DueAt(m.id, m.version, DEFAULT_DECAY.fades_at(m)) for m in chunk])
        ids += [m.id for m in chunk]
    if established:  # the checkpoints of a due order built with today's policies
        schedules = {"decay": DEFAULT_DECAY.fingerprint(), "archive": RetentionRule.fingerprint}
        for job, fingerprint in schedules.items():
            backend.checkpoints.save(
                TENANT, job, JobState(completed_at=NOW, schedule=fingerprint).model_dump_json()
            )
    return ids


def created_event(memory: Memory) -> HistoryEvent:
    return HistoryEvent(
        id=new_id(memory.created_at),
        tenant_id=memory.tenant_id,
        memory_id=memory.id,
        action=HistoryAction.CREATED,
        at=memory.created_at,
        after={"content": memory.content},
    )


# --------------------------------------------------------------------------------- count


def listed(store: MemoryStore, status: MemoryStatus) -> Iterator[Memory]:
    cursor: str | None = None
    while True:
        page = store.list_memories(TENANT, MemoryFilter(statuses=(status,)), cursor=cursor, limit=500)
        yield from page.items
        cursor = page.cursor
        if cursor is None:
            return


@dataclass
class Due:
    """What the next round's jobs have to examine, counted over the hot memories (out of band)."""

    fading: int = 0
    expiring: int = 0


def due_at(backend: Backend, now: datetime) -> Due:
    """Memories that have faded, and memories that expire within the look-ahead."""
    due = Due()
    for m in listed(backend.store, MemoryStatus.ACTIVE):
        due.fading += DEFAULT_DECAY.fades(m, now)
        due.expiring += m.expires_at is not None and m.expires_at <= now + LOOKAHEAD
    return due


def audit(backend: Backend, written: list[str]) -> tuple[int, int]:
    """(hot, in archive); raises AssertionError unless hot + archive == written, exactly once each."""
    hot = {m.id for m in listed(backend.store, MemoryStatus.ACTIVE)}
    stubs = {m.id: m.archive_ref for m in listed(backend.store, MemoryStatus.ARCHIVED)}
    held: Counter[str] = Counter()
    for ref in backend.archive.iter_refs(TENANT):
        for line in gzip.decompress(backend.read_object(ref)).decode().splitlines():
            held[json.loads(line)["memory"]["id"]] += 1
    twice = [memory_id for memory_id, copies in held.items() if copies > 1]
    assert not twice, f"{len(twice)} memories archived twice, e.g. {twice[:3]}"
    assert hot.isdisjoint(held), "a memory is both hot and archived"
    assert set(stubs) == set(held), "archive and stubs disagree"
    for memory_id, ref in list(stubs.items())[:: max(1, len(stubs) // 50)]:  # the port agrees too
        assert ref is not None and backend.archive.get(TENANT, ref, memory_id)[0].id == memory_id
    assert len(hot) + len(held) == len(written) and hot | set(held) == set(written), "memories lost"
    return len(hot), len(held)


# ----------------------------------------------------------------------------------- run


ROUNDS = (
    ("first", timedelta(0)),
    ("re-run", timedelta(0)),
    ("a day later", timedelta(days=1)),
    ("a week later", timedelta(days=6)),
)
LOOKAHEAD = timedelta(hours=36)
"""The archive job's look-ahead on Lambda (daily schedules: `Settings.lifecycle_lookahead`)."""


def run(
    backend_name: str,
    n: int,
    page_size: int,
    workdir: Path,
    rounds: int = len(ROUNDS),
    *,
    budget_s: float | None = None,
    reconcile: bool = False,
    established: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[Round]:
    """Seed, then the rounds (audited after each); `budget_s` runs each job in budgeted invocations.

    `established` seeds a deployment whose due order is built (`seed`), without index documents
    (unless `reconcile`, which compares them): its first round already reads only what is due.
    """
    rng = random.Random(7)
    say = progress or (lambda _: None)
    with BACKENDS[backend_name](workdir) as backend:
        backend.store.ensure_schema()
        backend.index.ensure_schema()
        backend.checkpoints.ensure_schema()
        clock = ManualClock(NOW)
        counting = CountingStore(backend.store)
        service = MemoryService(
            counting,  # type: ignore[arg-type]
            backend.index,
            HashingEmbedder(DIMENSION),
            clock,
            archive=backend.archive,
        )
        config = LifecycleConfig(page_size=page_size, lookahead=LOOKAHEAD)
        lifecycle = LifecycleService(service, backend.checkpoints, config)
        started = time.perf_counter()
        written = seed(backend, n, rng, index=reconcile or not established, established=established)
        results = [Round("seed", seconds={"seed": time.perf_counter() - started})]
        results[0].hot, results[0].in_archive = audit(backend, written)
        say(f"seeded {n} in {results[0].seconds['seed']:.0f} s")
        jobs = ("decay", "archive", "reconcile") if reconcile else ("decay", "archive")
        for label, advance in ROUNDS[:rounds]:
            clock.advance(seconds=advance.total_seconds())
            due = due_at(backend, clock.now())
            # the writes since decay last ran: the previous round's renewals (each examined once)
            results.append(one_round(label, lifecycle, counting, jobs, due, results[-1].renewed, budget_s))
            results[-1].hot, results[-1].in_archive = audit(backend, written)
            if reconcile:
                results[-1].due["reconcile"] = results[-1].hot  # it reads every searchable memory
            say(f"{label}: read {results[-1].read}, due {results[-1].due}, s {results[-1].seconds}")
        return results


def one_round(
    label: str,
    lifecycle: LifecycleService,
    counting: CountingStore,
    jobs: Sequence[str],
    due: Due,
    written: int,
    budget_s: float | None,
) -> Round:
    result = Round(label)
    # decay: what faded, plus each memory written since its last run (examined once)
    result.due = {"decay": due.fading + written, "archive": due.expiring, "reconcile": 0}
    for job in jobs:
        counting.read = 0
        started = time.perf_counter()
        reports: list[JobReport] = []
        while not reports or not reports[-1].complete:
            budget = Deadline(budget_s) if budget_s is not None else None
            reports.append(lifecycle.run(job, TENANT, budget))  # type: ignore[arg-type]
        result.seconds[job] = time.perf_counter() - started
        result.invocations[job] = len(reports)
        result.read[job] = counting.read
        result.archived[job] = sum(r.archived for r in reports)
        result.scan[job] = reports[0].scan or "index"
        result.renewed += sum(getattr(r, "renewed", 0) for r in reports)
        assert all(r.conflicts == 0 for r in reports)
    result.due = {job: result.due[job] for job in jobs}
    return result

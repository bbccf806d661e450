"""Synthetic memories for the latency and load benchmarks: one tenant's varied, realistic writes.

Template sentences with types, tags, sessions, agents, importance and ages (`Corpus`), the
queries asked of them (`make_queries`), and `bulk_load`, which writes them as `rearview import`
or a reindex would (`store.commit` in batches, then `index.upsert`). Shared by
`search_latency.py`, `concurrent_search.py`, `tenant_isolation.py`, `reindex_time.py` and
`embedder_cost.py`, so each measures the same data.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from rearview.models import (
    HistoryAction,
    HistoryEvent,
    Memory,
    MemoryFilter,
    MemoryType,
    Visibility,
)
from rearview.ports import Embedder, IndexDocument, MemoryIndex, MemoryStore, StoreWrite, Vector
from rearview.service.history import snapshot
from rearview.service.policy import DEFAULT_RETENTION
from rearview.shared.ids import new_id
from rearview.shared.scopes import scope_key
from rearview.text import content_hash

TENANT = "bench-tenant"
LOAD_BATCH = 1000


def _words(text: str, sep: str | None = None) -> list[str]:
    return [w.strip() for w in text.split(sep) if w.strip()]


PEOPLE = _words("""Alice Bob Carmen Dmitri Elena Farid Grace Hiro Ines Jamal Kenji Lena Mateo Nadia Omar
Priya Quentin Rosa Sven Tariq Uma Viktor Wen Ximena Yusuf Zoe""")
TOOLS = _words("""git docker kubectl terraform pytest npm cargo poetry make ansible helm psql redis-cli aws
gcloud ffmpeg curl jq ruff mypy webpack vite gradle maven""")
PROJECTS = _words("""billing-api checkout search-service mobile-app data-pipeline auth-gateway analytics
notifications inventory recommendations onboarding reporting ledger crm-sync image-resizer""")
TECH = _words("""PostgreSQL DynamoDB Redis Kafka OpenSearch SQLite React Vue FastAPI Django Flask Rust Go
TypeScript GraphQL gRPC Lambda S3 SQS Snowflake Airflow Spark Terraform Kubernetes""")
ERRORS = _words("""timeout OOMKilled 502 429 deadlock ECONNRESET segfault ImportError KeyError
permission-denied disk-full TLS-handshake-failure schema-mismatch flaky-test rate-limit""")
COMPONENTS = _words("""scheduler worker cache migration frontend API-gateway queue consumer cron-job
load-balancer replica index webhook uploader tokenizer""")
ACTIVITIES = _words(
    """code review, standups, pair programming, incident response, planning, demos,
writing docs, on-call handovers, retrospectives, hiring interviews""",
    ",",
)
THINGS = _words(
    """dark mode, tabs, spaces, short meetings, async updates, written specs, vim, VS Code,
emacs, early mornings, late evenings, green tea, espresso, standing desks, quiet rooms, type hints,
small pull requests, feature flags, trunk-based development, monorepos""",
    ",",
)
CITIES = _words("""Lisbon Berlin Tokyo Nairobi Toronto Austin Seoul Warsaw Madrid Oslo Bangalore
Melbourne Dublin Montreal Zurich""")
PLACES = _words("office cafe conference library airport coworking-space hotel lab park")
OUTCOMES = _words(
    """recovered after a restart, kept failing until the config was fixed, was rolled back,
passed every check, doubled its latency, ran out of memory, lost a few events, worked on the
second try""",
    ",",
)
TAGS = _words("""project:billing project:search project:mobile infra ops incident preference deploy ci
testing security performance database frontend backend docs customer oncall release bug
meeting travel health family hobby learning""")
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")

TEMPLATES: dict[MemoryType, list[str]] = {
    MemoryType.SEMANTIC: [
        "{person} prefers {thing} over {thing2} for {activity}.",
        "{person} is the owner of {project}, which runs on {tech} and {tech2}.",
        "The {project} team uses {tech} for the {component} and {tech2} for analytics.",
        "{person} lives in {city} and works remotely {n} days a week.",
        "{person} is allergic to {thing} and avoids it during {activity}.",
        "The staging environment of {project} is hosted in {city} on {tech}.",
    ],
    MemoryType.EPISODIC: [
        "On {weekday}, {person} met {person2} at the {place} in {city} to discuss {project}.",
        "{person} deployed {project} v{n}.{m} to production; the {component} {outcome}.",
        "Incident #{ticket}: {project} returned {error} from the {component}; {person} was on call.",
        "{person} demoed the new {component} of {project} to {person2} on {weekday}.",
        "The {project} migration to {tech} finished on {weekday} and the {component} {outcome}.",
    ],
    MemoryType.PROCEDURAL: [
        "To release {project}, run `{tool} build` then `{tool} push` and tag the commit v{n}.{m}.",
        "When `{tool}` fails with {error} in {project}, clear the {component} cache and retry.",
        "Lesson: never run {tool} against the {project} {tech} database without a snapshot.",
        "To debug {error} in the {component}, enable verbose logging in {tech} and rerun {tool}.",
        "Before {activity}, {person} wants the agenda and the {project} dashboard link.",
    ],
    MemoryType.WORKING: [
        "Currently investigating {error} in the {component} of {project}; next step: check {tech}.",
        "Draft reply to {person} about {project} is half done; waiting on numbers from {person2}.",
        "Scratch: ticket #{ticket} may be a duplicate of #{ticket2} ({error} in {component}).",
    ],
}
TYPE_WEIGHTS = {
    MemoryType.SEMANTIC: 4,
    MemoryType.EPISODIC: 4,
    MemoryType.PROCEDURAL: 2,
    MemoryType.WORKING: 1,
}
QUERY_TEMPLATES = [
    "what does {person} prefer for {activity}",
    "how do I release {project}",
    "{tool} {error} fix",
    "who owns {project}",
    "incidents with {error} in the {component}",
    "when did {person} meet {person2}",
    "{project} {tech} migration",
    "where does {person} live",
    "lessons about {tool} and {tech}",
    "{person} {project} deploy",
    "debugging {error} {component}",
    "what happened in {city} on {weekday}",
]


def fill_template(template: str, rng: random.Random) -> str:
    """`template` with each placeholder drawn from the word lists (deterministic for a seeded `rng`)."""
    return template.format(
        person=rng.choice(PEOPLE),
        person2=rng.choice(PEOPLE),
        tool=rng.choice(TOOLS),
        project=rng.choice(PROJECTS),
        tech=rng.choice(TECH),
        tech2=rng.choice(TECH),
        error=rng.choice(ERRORS),
        component=rng.choice(COMPONENTS),
        activity=rng.choice(ACTIVITIES),
        thing=rng.choice(THINGS),
        thing2=rng.choice(THINGS),
        city=rng.choice(CITIES),
        place=rng.choice(PLACES),
        outcome=rng.choice(OUTCOMES),
        weekday=rng.choice(WEEKDAYS),
        n=rng.randint(1, 9),
        m=rng.randint(0, 30),
        ticket=rng.randint(1000, 99999),
        ticket2=rng.randint(1000, 99999),
    )


@dataclass(frozen=True, slots=True)
class Synthetic:
    """One generated memory: what a writer would pass to `memory_write`, plus its age."""

    content: str
    type: MemoryType
    tags: list[str]
    session_id: str
    agent_id: str
    visibility: Visibility
    importance: int
    age_days: float


@dataclass(slots=True)
class Corpus:
    """A deterministic stream of varied memories; remembers sessions seen, for session filters."""

    rng: random.Random
    sessions: list[str] = field(default_factory=list)
    _session: str = ""
    _left_in_session: int = 0

    def __iter__(self) -> Iterator[Synthetic]:
        types = list(TYPE_WEIGHTS)
        weights = list(TYPE_WEIGHTS.values())
        while True:
            if self._left_in_session == 0:
                self._session = f"session-{len(self.sessions):06d}"
                self.sessions.append(self._session)
                self._left_in_session = self.rng.randint(5, 40)
            self._left_in_session -= 1
            mtype = self.rng.choices(types, weights)[0]
            agent = f"agent-{min(int(self.rng.expovariate(1.0)), 5)}"
            yield Synthetic(
                content=fill_template(self.rng.choice(TEMPLATES[mtype]), self.rng),
                type=mtype,
                tags=self.rng.sample(TAGS, k=self.rng.choice((0, 1, 1, 2, 2, 3))),
                session_id=self._session,
                agent_id=agent,
                visibility=Visibility.PRIVATE if self.rng.random() < 0.2 else Visibility.SHARED,
                importance=self.rng.choice((1, 2, 3, 3, 3, 4, 4, 5)),
                age_days=self.rng.uniform(0, 0.9 if mtype is MemoryType.WORKING else 170),
            )


def to_memory(s: Synthetic, now: datetime, model_id: str, tenant: str = TENANT) -> Memory:
    """The record `MemoryService.write` would have created for `s`, `age_days` ago."""
    at = now - timedelta(days=s.age_days)
    return Memory(
        id=new_id(at),
        tenant_id=tenant,
        type=s.type,
        content=s.content,
        agent_id=s.agent_id,
        session_id=s.session_id,
        visibility=s.visibility,
        tags=s.tags,
        importance=s.importance,
        created_at=at,
        updated_at=at,
        last_accessed_at=at,
        event_time=at,
        expires_at=DEFAULT_RETENTION.expires_at(s.type, s.importance, None, at),
        content_hash=content_hash(s.content),
        scope_key=scope_key(s.type, s.visibility, s.agent_id, s.session_id),
        embedding_model=model_id,
    )


def created_writes(batch: Sequence[Memory]) -> list[StoreWrite]:
    """Each memory's first commit: the record and its `created` history event (as a write makes)."""
    return [
        StoreWrite(
            m,
            HistoryEvent(
                id=new_id(m.created_at),
                tenant_id=m.tenant_id,
                memory_id=m.id,
                action=HistoryAction.CREATED,
                at=m.created_at,
                actor=m.agent_id,
                after=snapshot(m),
            ),
            None,
        )
        for m in batch
    ]


def bulk_load(
    store: MemoryStore,
    index: MemoryIndex | None,
    embedder: Embedder,
    corpus: Iterator[Synthetic],
    n: int,
    tenant: str = TENANT,
) -> Vector:
    """Load `n` memories of `tenant` in batches (store first, then index); returns their vectors.

    With `index` None only the store is written (and nothing is embedded: the vectors are zeros).
    """
    now = datetime.now(UTC)
    vectors = np.zeros((n, embedder.dimension), dtype=np.float32)
    for start in range(0, n, LOAD_BATCH):
        batch = [
            to_memory(next(corpus), now, embedder.model_id, tenant) for _ in range(min(LOAD_BATCH, n - start))
        ]
        store.commit(created_writes(batch))
        if index is not None:
            vecs = embedder.embed_documents([m.content for m in batch])
            vectors[start : start + len(batch)] = vecs
            index.upsert([IndexDocument(m, v) for m, v in zip(batch, vecs, strict=True)])
    return vectors


# ------------------------------------------------------------------------------------- queries


@dataclass(frozen=True, slots=True)
class Query:
    """One timed query: text, its precomputed vector, a filter and a label for the filter kind."""

    text: str
    vector: Vector
    filter: MemoryFilter
    kind: str


def fresh_query(rng: random.Random, seen: set[str]) -> str:
    """A query text not in `seen` (which gains it): templates with few fillings repeat otherwise."""
    text = fill_template(rng.choice(QUERY_TEMPLATES), rng)
    while text in seen:
        text = fill_template(rng.choice(QUERY_TEMPLATES), rng)
    seen.add(text)
    return text


def distinct_queries(rng: random.Random, n: int) -> list[str]:
    """`n` different query texts, in the order drawn."""
    seen: set[str] = set()
    return [fresh_query(rng, seen) for _ in range(n)]


def make_queries(rng: random.Random, sessions: Sequence[str], embedder: Embedder, n: int) -> list[Query]:
    """`n` queries: two thirds unfiltered, the rest filtered by type, tags, session or agent."""
    out = []
    for _ in range(n):
        text = fill_template(rng.choice(QUERY_TEMPLATES), rng)
        kind = rng.choice(["none"] * 8 + ["type", "tags", "session", "agent"])
        flt = {
            "none": MemoryFilter(),
            "type": MemoryFilter(types=(rng.choice(list(TYPE_WEIGHTS)),)),
            "tags": MemoryFilter(tags=(rng.choice(TAGS),)),
            "session": MemoryFilter(session_id=rng.choice(sessions)),
            "agent": MemoryFilter(agent_id=f"agent-{rng.randint(0, 3)}"),
        }[kind]
        out.append(Query(text, embedder.embed_query(text), flt, kind))
    return out


class PrecomputedEmbedder:
    """The hashing embedder, except that queries seen before answer from a table (no embedder time)."""

    def __init__(self, inner: Embedder, queries: dict[str, Vector]) -> None:
        self._inner = inner
        self._queries = queries

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        found = self._queries.get(text)
        return found if found is not None else self._inner.embed_query(text)

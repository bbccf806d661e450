"""`ImportRunner`: writes a source's records through the service's write path, once, and reports.

Every record goes through the same validation and write path as any import (`WriteRequest`, then
`MemoryService.write`): dedup, limits, `source: import`. Each write carries the record's source id
in `metadata.imported_from` (`mem0:<id>`) and in its idempotency key, so a second run of the same
file writes nothing new. A record is the same only with the same text: a source id alone is not
an identity (two users' files both have a `mem0:#1`, a re-export carries new text under an old id,
one file may hold an id twice). A record counts as `already imported` only when its text is stored
from that source id:

- the first text of a source id is written under the key `import:<source id>`, a later one under
  `import:<source id>#<its content hash>`; either key replays;
- a record that merged into a memory already stored with its text (an exact duplicate in its scope)
  is found by that memory's history, which records the merge's `imported_from`.

A record whose source id is the source's own (not a position in the file, `#3`) and whose text
differs from what that id stored last is a change: it is written with `supersedes` naming that
memory (`updated`), so the old text is kept as history, not left as a second current fact. Any
other new text is a memory of its own (`created` or `merged`).

A record that replaces another (`Candidate.replaces`: a Graphiti edge that invalidated an older one)
is written after it, with `supersedes` naming its memory: the older fact is kept, superseded.
A record the service refuses (a limit, an unknown type) is `refused` with the error, naming the
field; a backend failure stops the run (`stopped`). A record is also found under its `aliases`
(the ids another name of the same source gave it). A new record whose retention, counted from its
`created_at`, has already ended is skipped saying why: written, it would be expired on arrival.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from rearview.errors import BackendError, RearviewError
from rearview.importers.records import Candidate, Record, Refused, Skipped, is_numbered
from rearview.limits import MAX_IDEMPOTENCY_KEY_CHARS
from rearview.models import Memory, MemorySource, MemoryStatus, WriteAction, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.service.visibility import agent_idempotency_key
from rearview.service.write.created import created_at
from rearview.shared.scopes import scope_key
from rearview.text import content_hash

ALREADY = "already imported"
UPDATED = "updated"
MAX_VERSIONS = 1000
"""Texts of one source id followed from its first memory to its latest (a guard against a cycle)."""


def _nothing(_n: int) -> None:
    """No progress to show."""


@dataclass
class ImportReport:
    """What an import did: records per action, and the records skipped or refused.

    Actions: `created`, `merged`, `superseded`, `updated` (a changed record: its new text superseded
    what its id stored before), `already imported` (an earlier run stored this text from this
    record), `retired` (its text is a superseded memory's: nothing written). Skipped: by the source's
    own state (deleted, expired, invalidated). Refused: by the service's validation (the error names
    the field).
    """

    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    refused: list[Skipped] = field(default_factory=list)
    stopped: bool = False
    tenant: str = ""
    agents: set[str] = field(default_factory=set)
    """The agents whose memories the records landed in (written, merged, or already there)."""

    def count(self, action: str) -> None:
        self.counts[action] = self.counts.get(action, 0) + 1

    @property
    def written(self) -> int:
        """Records that changed the store (created, merged, superseding or updated)."""
        return sum(
            n for action, n in self.counts.items() if action not in (ALREADY, WriteAction.RETIRED.value)
        )

    def details(self) -> list[str]:
        """One line per record not imported: `skipped mem0:<id>: <why>`, `refused ...: <error>`."""
        return [f"skipped {s.source_id}: {s.reason}" for s in self.skipped] + [
            f"refused {r.source_id}: {r.reason}" for r in self.refused
        ]

    def summary(self) -> str:
        """The whole report in one line.

        `mapped 5 into tenant 't' (agent 'default'): created 3, merged 1, already imported 1; skipped 2;
        refused 0`.
        """
        mapped = sum(self.counts.values())
        line = f"mapped {mapped} {self.where()}"
        line += f"; skipped {len(self.skipped)}; refused {len(self.refused)}"
        return line + ("; stopped at a backend failure" if self.stopped else "")

    def where(self) -> str:
        """`into tenant 't' (agents 'a', 'b'): created 3, merged 1`: where the records went, and how."""
        parts = ", ".join(f"{action} {n}" for action, n in sorted(self.counts.items())) or "nothing"
        agents = sorted(self.agents)
        noun = "agent" if len(agents) == 1 else "agents"
        who = f" ({noun} {', '.join(repr(a) for a in agents)})" if agents else ""
        return f"into tenant {self.tenant!r}{who}: {parts}"


def idempotency_key(source_id: str, content: str | None = None) -> str:
    """`import:<source id>`, or with the text's hash (`import:<source id>#<hash>`) for a later text.

    `import:sha256:<hash of it all>` when that is longer than a key may be.
    """
    key = f"import:{source_id}" + (f"#{content_hash(content)[:32]}" if content is not None else "")
    if len(key) <= MAX_IDEMPOTENCY_KEY_CHARS:
        return key
    return "import:sha256:" + hashlib.sha256(key.removeprefix("import:").encode("utf-8")).hexdigest()


class ImportRunner:
    """Applies one source's records to a tenant of `service`, each at most once across runs."""

    def __init__(self, service: MemoryService, tenant: str, agent_id: str | None = None) -> None:
        self.service = service
        self.tenant = tenant
        self.agent_id = agent_id
        """The agent records without one of their own are written as (None: the default agent)."""
        self.report = ImportReport(tenant=tenant)
        self._memory_of: dict[str, str | None] = {}
        """Source id -> the memory it landed in (None: it did not land)."""

    def run(self, records: Iterable[Record], advance: Callable[[int], object] = _nothing) -> ImportReport:
        """Write every candidate, predecessors before what replaces them; stop at a backend failure.

        `advance(n)` is told of each `n` records done (skipped and refused ones included).
        """
        pending: list[Candidate] = []
        for record in records:
            if isinstance(record, Skipped):
                self.report.skipped.append(record)
            elif isinstance(record, Refused):
                self.report.refused.append(Skipped(record.source_id, record.reason))
            else:
                pending.append(record)
        advance(len(self.report.skipped) + len(self.report.refused))
        for candidate in _in_order(pending):
            self._apply(candidate)
            advance(1)
            if self.report.stopped:
                break
        return self.report

    def _apply(self, candidate: Candidate) -> None:
        source_id = candidate.source_id
        again_in_run = source_id in self._memory_of  # one id twice in the file: two records
        self._memory_of[source_id] = None
        names = (source_id, *candidate.aliases)
        try:
            req = self._request(candidate)
            first = self._first(req, names)
            latest = None if again_in_run or is_numbered(source_id) else self._latest(first, names)
            if latest is not None and latest.content_hash != content_hash(req.content):
                action = self._update(req, latest)
            else:
                landed = self._landed(req, first, names)
                if landed is not None:
                    self._memory_of[source_id] = landed.id
                    self.report.agents.add(landed.agent_id)
                    self.report.count(ALREADY)
                    return
                gone = self._past_retention(req)
                if gone is not None:
                    self.report.skipped.append(Skipped(source_id, gone))
                    return
                action = self._write(req if first is None else self._later_text(req))
        except RearviewError as exc:
            self.report.stopped = isinstance(exc, BackendError)
            self.report.refused.append(Skipped(source_id, str(exc)))
            return
        self._memory_of[source_id] = action[1]
        self.report.agents.add(req.agent_id)
        self.report.count(action[0])

    def _past_retention(self, req: WriteRequest) -> str | None:
        """Why a record is not written, when its retention counted from its `created_at` has ended.

        Written, it would be expired on arrival: absent from every read, and never merged into.
        """
        now = self.service.clock.now()
        born = created_at(req, now)  # InvalidInputError for a time in the future
        retention = self.service.config.policy(self.tenant).retention
        expires = retention.expires_at(req.type, req.importance, req.ttl_days, born) if born else None
        if born is None or expires is None or expires > now:
            return None
        kept = req.ttl_days if req.ttl_days is not None else retention.days_for(req.type, req.importance)
        return (
            f"past its retention: created {born.date().isoformat()}, kept {kept:g} days "
            f"(importance {req.importance}), so it expired on {expires.date().isoformat()}; "
            "to keep such memories, raise REARVIEW_RETENTION_DAYS for their importance"
        )

    def _write(self, req: WriteRequest) -> tuple[str, str]:
        result = self.service.write(self.tenant, req)
        return (ALREADY if result.idempotent_replay else result.action.value), result.memory.id

    def _update(self, req: WriteRequest, latest: Memory) -> tuple[str, str]:
        """A changed record: its new text supersedes what it stored last (`updated`)."""
        if req.supersedes is not None or latest.agent_id != req.agent_id:
            return self._write(self._later_text(req))  # a correction of its own, or another writer's
        action, memory_id = self._write(self._later_text(req).model_copy(update={"supersedes": latest.id}))
        return (UPDATED if action == WriteAction.SUPERSEDED.value else action), memory_id

    def _later_text(self, req: WriteRequest) -> WriteRequest:
        """`req` under its text's own key: its source id already stored another text."""
        metadata = req.metadata
        return req.model_copy(
            update={"idempotency_key": idempotency_key(str(metadata["imported_from"]), req.content)}
        )

    def _request(self, candidate: Candidate) -> WriteRequest:
        fields = candidate.fields
        metadata = {**fields.get("metadata", {}), "imported_from": candidate.source_id}
        replaced = self._memory_of.get(candidate.replaces) if candidate.replaces else None
        agent = fields.get("agent_id") or self.agent_id
        return WriteRequest.model_validate(
            {
                **fields, **({"agent_id": agent} if agent else {}), "metadata": metadata,
                "idempotency_key": idempotency_key(candidate.source_id), "supersedes": replaced,
                "source": MemorySource.IMPORT.value,
            }
        )  # fmt: skip

    def _first(self, req: WriteRequest, names: tuple[str, ...]) -> Memory | None:
        """The memory the record's first text was written to, under its source id or an alias."""
        for name in names:
            found = self._stored(req, idempotency_key(name))
            if found is not None:
                return found
        return None

    def _stored(self, req: WriteRequest, key: str) -> Memory | None:
        """The memory `req`'s writer first wrote under the import key `key`, if any."""
        return self.service.store.find_by_idempotency_key(
            self.tenant, agent_idempotency_key(req.agent_id, key)
        )

    def _latest(self, first: Memory | None, names: tuple[str, ...]) -> Memory | None:
        """The active memory holding the last text `source_id` stored (`first`, or what superseded it)."""
        memory, steps = first, 0
        while memory is not None and memory.status is MemoryStatus.SUPERSEDED and memory.superseded_by:
            steps += 1
            successor = self.service.store.get(self.tenant, memory.superseded_by)
            if steps > MAX_VERSIONS or successor is None or not self._from(successor, names):
                return None  # superseded by another writer's correction: that stays
            memory = successor
        return memory if memory is not None and memory.status is MemoryStatus.ACTIVE else None

    def _landed(self, req: WriteRequest, first: Memory | None, names: tuple[str, ...]) -> Memory | None:
        """The stored memory this record's text already landed in (written, or merged into), if any."""
        digest = content_hash(req.content)
        if first is not None and first.content_hash == digest:
            return first
        for name in names:
            later = self._stored(req, idempotency_key(name, req.content))
            if later is not None:
                return later
        key = scope_key(req.type, req.visibility, req.agent_id, req.session_id)
        same = self.service.store.find_by_hash(self.tenant, key, digest)
        return same if same is not None and self._from(same, names) else None

    def _from(self, memory: Memory, names: tuple[str, ...]) -> bool:
        """Whether `memory` holds what a source id of `names` imported (created it, or merged into it)."""
        if memory.metadata.get("imported_from") in names:
            return True
        for event in self.service.store.history(self.tenant, memory.id):
            metadata = (event.after or {}).get("metadata") or {}
            if isinstance(metadata, dict) and metadata.get("imported_from") in names:
                return True
        return False


def _in_order(candidates: list[Candidate]) -> Iterator[Candidate]:
    """The candidates in file order, except that one waits for the record it `replaces` (in linear time).

    A record replacing one that is not in the file waits for nothing; in a cycle of replacements,
    the first waiting one in the file goes first (it is written without `supersedes`).
    """
    present = {c.source_id for c in candidates}
    waiting: dict[str, list[int]] = {}
    ready: deque[int] = deque()
    for n, candidate in enumerate(candidates):
        if candidate.replaces is None or candidate.replaces not in present:
            ready.append(n)
        else:
            waiting.setdefault(candidate.replaces, []).append(n)
    done = [False] * len(candidates)
    left = len(candidates)
    while left:
        if not ready:  # a cycle: release its first record in the file
            ready.append(min(n for ns in waiting.values() for n in ns if not done[n]))
        n = ready.popleft()
        if done[n]:
            continue
        done[n], left = True, left - 1
        yield candidates[n]
        ready.extend(waiting.pop(candidates[n].source_id, []))

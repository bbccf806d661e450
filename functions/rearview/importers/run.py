"""`ImportRunner`: writes a source's records through the service's write path, once, and reports.

Every record goes through the same validation and write path as any import (`WriteRequest`, then
`MemoryService.write`): dedup, limits, `source: import`. Each write carries the record's source id
twice: in `metadata.imported_from` (`mem0:<id>`) and in its idempotency key (`import:<source id>`),
so a second run of the same file writes nothing new:

- a record that created a memory is replayed by its idempotency key (`already imported`);
- a record that merged into a memory already stored with its text (an exact duplicate in its scope)
  is found by that memory's history, which records the merge's `imported_from`.

A record that replaces another (`Candidate.replaces`: a Graphiti edge that invalidated an older one)
is written after it, with `supersedes` naming its memory: the older fact is kept, superseded.
A record the service refuses (a limit, an unknown type) is `refused` with the error, naming the
field; a backend failure stops the run (`stopped`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from rearview.errors import BackendError, RearviewError
from rearview.importers.records import Candidate, Record, Refused, Skipped
from rearview.limits import MAX_IDEMPOTENCY_KEY_CHARS
from rearview.models import Memory, MemorySource, WriteAction, WriteRequest
from rearview.scopes import scope_key
from rearview.service.memory_service import MemoryService
from rearview.text import content_hash

ALREADY = "already imported"


@dataclass
class ImportReport:
    """What an import did: records per action, and the records skipped or refused.

    Actions: `created`, `merged`, `superseded`, `already imported` (an earlier run wrote it), `retired`
    (its text is a superseded memory's: nothing written). Skipped: by the source's own state (deleted,
    expired, invalidated). Refused: by the service's validation (the error names the field).
    """

    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    refused: list[Skipped] = field(default_factory=list)
    stopped: bool = False

    def count(self, action: str) -> None:
        self.counts[action] = self.counts.get(action, 0) + 1

    @property
    def written(self) -> int:
        """Records that changed the store (created, merged or superseding)."""
        return sum(
            n for action, n in self.counts.items() if action not in (ALREADY, WriteAction.RETIRED.value)
        )

    def details(self) -> list[str]:
        """One line per record not imported: `skipped mem0:<id>: <why>`, `refused ...: <error>`."""
        return [f"skipped {s.source_id}: {s.reason}" for s in self.skipped] + [
            f"refused {r.source_id}: {r.reason}" for r in self.refused
        ]

    def summary(self) -> str:
        """`mapped 5: created 3, merged 1, already imported 1; skipped 2; refused 0` in one line."""
        mapped = sum(self.counts.values())
        parts = ", ".join(f"{action} {n}" for action, n in sorted(self.counts.items()))
        line = f"mapped {mapped}" + (f": {parts}" if parts else "")
        line += f"; skipped {len(self.skipped)}; refused {len(self.refused)}"
        return line + ("; stopped at a backend failure" if self.stopped else "")


def idempotency_key(source_id: str) -> str:
    """`import:<source id>`, or `import:<sha256 of it>` when that is longer than a key may be."""
    key = f"import:{source_id}"
    if len(key) <= MAX_IDEMPOTENCY_KEY_CHARS:
        return key
    return "import:sha256:" + hashlib.sha256(source_id.encode("utf-8")).hexdigest()


class ImportRunner:
    """Applies one source's records to a tenant of `service`, each at most once across runs."""

    def __init__(self, service: MemoryService, tenant: str, agent_id: str | None = None) -> None:
        self.service = service
        self.tenant = tenant
        self.agent_id = agent_id
        """The agent records without one of their own are written as (None: the default agent)."""
        self.report = ImportReport()
        self._memory_of: dict[str, str | None] = {}
        """Source id -> the memory it landed in (None: it did not land)."""

    def run(self, records: Iterable[Record]) -> ImportReport:
        """Write every candidate, predecessors before what replaces them; stop at a backend failure."""
        pending: list[Candidate] = []
        for record in records:
            if isinstance(record, Skipped):
                self.report.skipped.append(record)
            elif isinstance(record, Refused):
                self.report.refused.append(Skipped(record.source_id, record.reason))
            else:
                pending.append(record)
        while pending and not self.report.stopped:
            ready = [c for c in pending if c.replaces is None or c.replaces in self._memory_of]
            ready = ready or pending[:1]  # a cycle of replacements: write one without `supersedes`
            for candidate in ready:
                if not self.report.stopped:
                    self._apply(candidate)
            pending = [c for c in pending if c not in ready]
        return self.report

    def _apply(self, candidate: Candidate) -> None:
        self._memory_of[candidate.source_id] = None
        try:
            req = self._request(candidate)
            merged = self._merged_before(req, candidate.source_id)
            if merged is not None:
                self._memory_of[candidate.source_id] = merged.id
                self.report.count(ALREADY)
                return
            result = self.service.write(self.tenant, req)
        except RearviewError as exc:
            self.report.stopped = isinstance(exc, BackendError)
            self.report.refused.append(Skipped(candidate.source_id, str(exc)))
            return
        self._memory_of[candidate.source_id] = result.memory.id
        self.report.count(ALREADY if result.idempotent_replay else result.action.value)

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

    def _merged_before(self, req: WriteRequest, source_id: str) -> Memory | None:
        """The stored exact duplicate of `req` that this record was merged into by an earlier run, if any."""
        key = scope_key(req.type, req.visibility, req.agent_id, req.session_id)
        same = self.service.store.find_by_hash(self.tenant, key, content_hash(req.content))
        if same is None:
            return None
        for event in self.service.store.history(self.tenant, same.id):
            metadata = (event.after or {}).get("metadata") or {}
            if isinstance(metadata, dict) and metadata.get("imported_from") == source_id:
                return same
        return None

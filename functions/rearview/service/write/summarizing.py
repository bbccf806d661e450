"""`memory_summarize`: consolidate a session's (or time range's) episodic memories into one memory.

Who writes the consolidation, best first:
1. **the agent** (`summary`): the calling model read the sources and wrote what matters; it is
   stored as the agent's own memory (`summary_method: agent`) with lineage to the sources, and
   replaces the agent's earlier summaries of the same sources (`supersedes`);
2. **the deployment's language model** (`REARVIEW_LLM`): an abstractive paragraph;
3. **offline**: the sources' own fact-carrying statements (`summarize.extractive_summary`); the
   tool then returns the sources compactly and asks the agent for its own consolidation.

Every summary keeps the session, links its sources (`derived_from`, and each source's
`consolidated_into`, so ranking puts it first and its details after), is `private` to its writer
when any source is, and names whose words it carries (`source_agents`, `source_speakers`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final

from rearview.errors import ConflictError, EmbedderError, InvalidInputError
from rearview.limits import MAX_TAGS, AgentIdText, ContentText, checked
from rearview.models import (
    HistoryAction,
    Memory,
    MemoryFilter,
    MemorySource,
    MemoryType,
    MemoryView,
    MetadataValue,
    Visibility,
    WriteRequest,
    WriteResult,
)
from rearview.ports import Embedder, MemoryStore, StoreWrite
from rearview.service.history import change_event
from rearview.service.visibility import scoped
from rearview.service.write.consolidation import Consolidator, Summary
from rearview.shared.clock import Clock

log = logging.getLogger(__name__)

SUMMARY_MAX_SOURCES = 200
AGENT_METHOD: Final = "agent"
"""`metadata.summary_method` of a consolidation the calling agent wrote itself."""


class Summarizer:
    """Consolidates sources through `write` (the service's write path: dedup, screening, indexing)."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        consolidator: Consolidator,
        clock: Clock,
        write: Callable[[str, WriteRequest], WriteResult],
        present: Callable[[Memory], MemoryView],
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.consolidator = consolidator
        self.clock = clock
        self._write = write
        self._present = present

    def summarize(
        self,
        tenant_id: str,
        session_id: str | None,
        time_from: datetime | None,
        time_to: datetime | None,
        summary_type: MemoryType,
        agent_id: str,
        agent_bound: bool,
        summary: str | None = None,
    ) -> WriteResult:
        """The consolidation of the episodic memories `agent_id` sees in the session or range.

        Working memory is scratch and left out, and a summary is never re-summarized. A credential
        bound to its agent (`agent_bound`) links only the sources that agent wrote: other agents'
        memories are summarized but keep their rank.
        """
        checked(AgentIdText, agent_id, "agent_id")
        if summary is not None:
            summary = checked(ContentText, summary, "summary")
            if not summary.strip():
                raise InvalidInputError("summary", "is blank: give your consolidation, or omit it")
        sources = self.sources(tenant_id, session_id, time_from, time_to, agent_id)
        label = f"session {session_id}" if session_id else "time range"
        made = Summary(summary, AGENT_METHOD) if summary is not None else self._made(sources, label)
        metadata: dict[str, MetadataValue] = {"summary_method": made.method}
        if made.model_id:
            metadata["summary_model"] = made.model_id
        in_order = sorted(sources, key=lambda m: (m.event_time, m.id))
        req = WriteRequest(
            content=made.content,
            metadata=metadata,
            type=summary_type,
            agent_id=agent_id,
            visibility=Visibility.PRIVATE
            if any(m.visibility is Visibility.PRIVATE for m in sources)
            else Visibility.SHARED,
            session_id=session_id,
            tags=list(dict.fromkeys(t for m in sources for t in m.tags))[:MAX_TAGS],
            importance=max(m.importance for m in sources),
            event_time=max(m.event_time for m in sources),
            derived_from=[m.id for m in sources],
            source=MemorySource.SUMMARY,
            source_agents=list(dict.fromkeys(m.agent_id for m in in_order)),
            source_speakers=list(dict.fromkeys(m.speaker for m in in_order if m.speaker)),
            supersedes=self._replaced(tenant_id, session_id, time_from, time_to, agent_id, sources)
            if summary is not None
            else None,
        )
        result = self._write(tenant_id, req)
        owned = [m for m in sources if not agent_bound or m.agent_id == agent_id]
        self._link_sources(tenant_id, owned, result.memory.id)
        if made.method != "extractive":
            return result
        return result.model_copy(update={"sources": [self._present(m) for m in in_order]})

    def sources(
        self,
        tenant_id: str,
        session_id: str | None,
        time_from: datetime | None,
        time_to: datetime | None,
        agent_id: str,
    ) -> list[Memory]:
        """The episodic memories a summary of the session or range consolidates (InvalidInputError: none)."""
        if session_id is None and time_from is None and time_to is None:
            raise InvalidInputError("session_id", "give a session_id or a time range (time_from/time_to)")
        found = self._listed(tenant_id, session_id, time_from, time_to, agent_id, (MemoryType.EPISODIC,))
        sources = [m for m in found if m.source is not MemorySource.SUMMARY]
        if not sources:
            raise InvalidInputError(
                "session_id",
                "no episodic memories match (working memory is not summarized): nothing to summarize",
            )
        return sources

    def _listed(
        self,
        tenant_id: str,
        session_id: str | None,
        time_from: datetime | None,
        time_to: datetime | None,
        agent_id: str,
        types: tuple[MemoryType, ...] | None,
    ) -> list[Memory]:
        """The memories of the session or range `agent_id` sees (of `types`; None: any), at most 200."""
        flt = MemoryFilter(session_id=session_id, time_from=time_from, time_to=time_to, types=types)
        return self.store.list_memories(tenant_id, scoped(flt, agent_id), limit=SUMMARY_MAX_SOURCES).items

    def _made(self, sources: Sequence[Memory], label: str) -> Summary:
        """The deployment's consolidation: abstractive with a model, else the offline extract."""
        import numpy as np

        try:
            vectors = self.embedder.embed_documents([m.content for m in sources])
        except EmbedderError:
            vectors = np.ones((len(sources), 1), dtype=np.float32)
        return self.consolidator.summarize(sources, vectors, label)

    def _replaced(
        self,
        tenant_id: str,
        session_id: str | None,
        time_from: datetime | None,
        time_to: datetime | None,
        agent_id: str,
        sources: Sequence[Memory],
    ) -> str | None:
        """The newest active summary `agent_id` wrote of these sources (or of some of them), if any.

        The agent's own consolidation replaces it, e.g. the offline extract it was asked to improve on.
        """
        ids = {m.id for m in sources}
        found = self._listed(tenant_id, session_id, time_from, time_to, agent_id, None)
        earlier = [
            m
            for m in found
            if m.source is MemorySource.SUMMARY
            and m.agent_id == agent_id
            and m.derived_from
            and set(m.derived_from) <= ids
        ]
        return max(earlier, key=lambda m: (m.updated_at, m.id)).id if earlier else None

    def _link_sources(self, tenant_id: str, sources: Sequence[Memory], summary_id: str) -> None:
        """Mark each source `consolidated_into` the summary (a new version and a history event).

        Best-effort per source: one changed meanwhile (a conflict) keeps its newer version unlinked.
        """
        now = self.clock.now()
        for memory in sources:
            if summary_id in (memory.consolidated_into, memory.id):
                continue
            version = memory.version + 1
            linked = memory.model_copy(update={"consolidated_into": summary_id, "version": version})
            note = f"consolidated into summary {summary_id}"
            event = change_event(linked, HistoryAction.UPDATED, memory, now, actor="summarize", note=note)
            try:
                self.store.commit([StoreWrite(linked, event, memory.version)])
            except ConflictError:
                log.info("summary source %s changed meanwhile: left unlinked", memory.id)

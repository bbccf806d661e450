"""The transport port of the Python API: one method per MCP tool, over validated requests."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple, Protocol

from rearview.models import (
    ForgetRequest,
    ForgetResult,
    HistoryResult,
    IngestRequest,
    IngestResult,
    MemoryFilter,
    MemoryType,
    MemoryView,
    SearchRequest,
    Stats,
    UpdateRequest,
    WriteRequest,
)

if TYPE_CHECKING:
    from rearview.client.results import Recall, SummaryReceipt, WriteReceipt
    from rearview.service.browsing import BrowsePage
    from rearview.service.lifecycle.archival import RestoreResult


class SummarizeSpec(NamedTuple):
    """What `memory_summarize` consolidates (a session or a time range), as what type, by which agent."""

    session_id: str | None
    time_from: datetime | None
    time_to: datetime | None
    type: MemoryType
    agent_id: str
    summary: str | None = None
    """The caller's own consolidation (stored as its memory); None: the service writes one."""


class Transport(Protocol):
    """Carries out one validated request: over the service in this process, or over MCP.

    `agent_id` on each request is the acting agent (the remote transport leaves it to the
    credential unless the `Memory` was given one).
    """

    def write(self, req: WriteRequest) -> WriteReceipt: ...
    def search(self, req: SearchRequest, explain: bool) -> Recall: ...
    def get(self, memory_id: str, agent_id: str) -> MemoryView: ...
    def update(self, req: UpdateRequest) -> MemoryView: ...
    def forget(self, req: ForgetRequest) -> ForgetResult: ...
    def restore(self, memory_id: str, agent_id: str) -> RestoreResult: ...
    def history(self, memory_id: str, agent_id: str) -> HistoryResult: ...
    def ingest(self, req: IngestRequest) -> IngestResult: ...
    def summarize(self, spec: SummarizeSpec) -> SummaryReceipt: ...
    def stats(self) -> Stats: ...
    def browse(self, flt: MemoryFilter, agent_id: str, cursor: str | None, limit: int) -> BrowsePage: ...
    def close(self) -> None: ...

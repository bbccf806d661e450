"""The embedded transport: the service `rearview serve` builds, called in this process.

It answers exactly what the MCP tools answer, rendered by the same functions (`api/outputs.py`):
a write's receipt, a search's hits and context block. The tenant is the configured default tenant
unless one is named; the caller acts as an operator would on the command line (not bound to its
agent: `agent_bound` is False, as for `rearview` commands).
"""

from __future__ import annotations

from pathlib import Path

from rearview.api.outputs import search_result, summary_receipt, write_receipt
from rearview.bootstrap import build_service
from rearview.client.results import Recall, SummaryReceipt, WriteReceipt, recall_of
from rearview.client.transport import SummarizeSpec
from rearview.config.settings import Settings
from rearview.models import (
    ForgetRequest,
    ForgetResult,
    HistoryResult,
    IngestRequest,
    IngestResult,
    MemoryFilter,
    MemoryView,
    SearchRequest,
    Stats,
    UpdateRequest,
    WriteRequest,
)
from rearview.service.browsing import BrowsePage
from rearview.service.lifecycle.archival import RestoreResult
from rearview.service.memory_service import MemoryService


class EmbeddedTransport:
    """Carries requests out on a `MemoryService` for one tenant."""

    def __init__(self, service: MemoryService, tenant: str) -> None:
        self.service = service
        self.tenant = tenant

    @classmethod
    def open(cls, data_dir: Path | None, settings: Settings | None, tenant: str | None) -> EmbeddedTransport:
        """The service of `settings` (default: `Settings.load()`, the environment), in `data_dir` if given."""
        chosen = settings or Settings.load()
        if data_dir is not None:
            chosen = chosen.model_copy(update={"data_dir": data_dir})
        return cls(build_service(chosen), tenant or chosen.default_tenant)

    def write(self, req: WriteRequest) -> WriteReceipt:
        return write_receipt(self.service.write(self.tenant, req))

    def search(self, req: SearchRequest, explain: bool) -> Recall:
        return recall_of(search_result(self.service.search(self.tenant, req), explain))

    def get(self, memory_id: str, agent_id: str) -> MemoryView:
        return self.service.get(self.tenant, memory_id, agent_id)

    def update(self, req: UpdateRequest) -> MemoryView:
        return self.service.update(self.tenant, req)

    def forget(self, req: ForgetRequest) -> ForgetResult:
        return self.service.forget(self.tenant, req)

    def restore(self, memory_id: str, agent_id: str) -> RestoreResult:
        return self.service.restore(self.tenant, memory_id, agent_id)

    def history(self, memory_id: str, agent_id: str) -> HistoryResult:
        return self.service.history(self.tenant, memory_id, agent_id)

    def ingest(self, req: IngestRequest) -> IngestResult:
        return self.service.ingest(self.tenant, req)

    def summarize(self, spec: SummarizeSpec) -> SummaryReceipt:
        result = self.service.summarize(
            self.tenant, session_id=spec.session_id, time_from=spec.time_from, time_to=spec.time_to,
            summary_type=spec.type, agent_id=spec.agent_id, summary=spec.summary,
        )  # fmt: skip
        return summary_receipt(result)

    def stats(self) -> Stats:
        return self.service.stats(self.tenant)

    def browse(self, flt: MemoryFilter, agent_id: str, cursor: str | None, limit: int) -> BrowsePage:
        return self.service.browse(self.tenant, flt, agent_id, cursor, limit)

    def close(self) -> None:
        """Close the store's and the index's files (the adapters that hold any)."""
        for part in (self.service.store, self.service.index, self.service.embedder):
            close = getattr(part, "close", None)
            if callable(close):
                close()

"""`rearview import --from SOURCE FILE`: read the export, keep its users apart, write, say where.

The CLI parses the arguments and prints; this runs the import: the records of `FILE` read as
`SOURCE` (`read_source`), split by `--per-user` (`users.batches`: an export of several users is
refused without it), each batch written to its tenant by an `ImportRunner`, with progress told
per record. The summary names every tenant and agent the records went to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from rearview.errors import InvalidInputError
from rearview.importers import read_source
from rearview.importers.run import ImportReport, ImportRunner
from rearview.importers.users import PerUser, batches
from rearview.service.memory_service import MemoryService

Progress = Callable[[int], AbstractContextManager[Callable[[int], None]]]
"""Given the number of records, a context giving `advance(n)` (the CLI's bar: `console.progress`)."""


@contextmanager
def no_progress(_total: int) -> Iterator[Callable[[int], None]]:
    """Progress shown nowhere."""
    yield lambda _n: None


@dataclass(frozen=True)
class Outcome:
    """What one `import --from` did: a report per tenant written to, in tenant order."""

    reports: list[ImportReport]

    @property
    def failed(self) -> bool:
        """Whether a record was refused or a backend failure stopped the import."""
        return any(r.refused or r.stopped for r in self.reports)

    def details(self) -> list[str]:
        """One line per record not imported, every tenant's."""
        return [line for report in self.reports for line in report.details()]

    def summary(self) -> str:
        """One line naming each tenant and agent written to, and what landed there.

        `mapped 20 into tenant 'alice' (agent 'default'): created 10; into tenant 'bob' (agent
        'default'): created 10; skipped 0; refused 0`.
        """
        mapped = sum(sum(r.counts.values()) for r in self.reports)
        where = "; ".join(r.where() for r in self.reports)
        line = f"mapped {mapped} {where}"
        line += f"; skipped {sum(len(r.skipped) for r in self.reports)}"
        line += f"; refused {sum(len(r.refused) for r in self.reports)}"
        return line + ("; stopped at a backend failure" if any(r.stopped for r in self.reports) else "")


def import_from(
    service: MemoryService,
    source: str,
    path: Path,
    tenant: str,
    per_user: PerUser | None = None,
    progress: Progress = no_progress,
) -> Outcome:
    """Import `path` as an export of `source` into `tenant` (or a tenant per user, as `per_user` says).

    InvalidInputError naming the file when it does not exist, cannot be read as `source`, or holds
    several users' memories and `per_user` is None (nothing is written then). `progress(records)`
    is told of each record done.
    """
    if not path.exists():
        raise InvalidInputError(str(path), "no such file or folder")
    split = batches(read_source(source, path), path, tenant, per_user)
    reports: list[ImportReport] = []
    with progress(sum(len(b.records) for b in split)) as advance:
        for batch in split:
            report = ImportRunner(service, batch.tenant).run(batch.records, advance)
            reports.append(report)
            if report.stopped:
                break
    return Outcome(reports)

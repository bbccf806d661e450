"""Very large tenants in indexes of their own: `TenantRoutedIndex` and the names it routes to.

A tenant named in `REARVIEW_OPENSEARCH_DEDICATED_TENANTS` has its own alias, `dedicated_alias`
(`<alias>-t-<hash>`, versioned `<alias>-t-<hash>-v<N>` like the shared one); every other tenant
shares the deployment's alias. The routing is a pure function of the configuration: no lookup, no
per-tenant alias for the small tenants (10k aliases would bloat the cluster state every node holds).

Each index is an `OpenSearchMemoryIndex` of its own (one client between them), so a dedicated
tenant's writes, deletes, searches (both channels, recall cues, keyword statistics), counts,
version listings and rebuilds all go to its index and nowhere else. Its queries keep the tenant
filter although the index holds no other tenant: one tenant never sees another's memories even if
a document lands in the wrong index. Moving a tenant in or out: `tenant_moves`.
"""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from opensearchpy import OpenSearch

from rearview.backends.opensearch.config import OpenSearchConfig
from rearview.backends.opensearch.index import OpenSearchMemoryIndex
from rearview.ports import ChannelHits, IndexDocument, IndexedVersions, IndexQuery

__all__ = ["TenantRoutedIndex", "dedicated_alias"]


def dedicated_alias(alias: str, tenant_id: str) -> str:
    """The alias of `tenant_id`'s own index: `<alias>-t-<first 16 hex of sha256(tenant id)>`.

    Tenant ids may hold what index names cannot (upper case, `/`, `*`, `:`, spaces, unicode), so
    the name carries a hash: stable across processes and releases, safe, and never `-v<N>` (the
    shared alias's versions) nor another tenant's (64 bits: no collision among any real tenant count).
    """
    digest = hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()[:16]
    return f"{alias}-t-{digest}"


class TenantRoutedIndex:
    """`VersionedIndex` over the shared index and one index per dedicated tenant, routed by tenant id.

    `dedicated` names the tenants with an index of their own (fixed for the adapter's life: a
    change of the setting is a redeploy). The constructor does no I/O; `client` is shared by every
    index (built from `config` on first use when not given).
    """

    def __init__(
        self, config: OpenSearchConfig, dedicated: Iterable[str], client: OpenSearch | None = None
    ) -> None:
        self._shared = OpenSearchMemoryIndex(config, client)
        self._dedicated_ids = frozenset(dedicated)
        self._dedicated: dict[str, OpenSearchMemoryIndex] = {}
        self._lock = threading.Lock()

    @property
    def config(self) -> OpenSearchConfig:
        """The shared index's configuration (a dedicated index's differs only in its alias)."""
        return self._shared.config

    @property
    def shared(self) -> OpenSearchMemoryIndex:
        """The index of every tenant without one of its own."""
        return self._shared

    @property
    def client(self) -> OpenSearch:
        return self._shared.client

    @property
    def dedicated_tenants(self) -> frozenset[str]:
        return self._dedicated_ids

    @property
    def space_notice(self) -> str | None:
        """Set by `ensure_schema` when an index holds another embedding model's vectors."""
        notices = [ix.space_notice for ix in self._all() if ix.space_notice]
        return notices[0] if notices else None

    def for_tenant(self, tenant_id: str) -> OpenSearchMemoryIndex:
        """The index that holds `tenant_id`'s memories: its own, or the shared one."""
        if tenant_id not in self._dedicated_ids:
            return self._shared
        with self._lock:
            index = self._dedicated.get(tenant_id)
            if index is None:
                cfg = replace(
                    self._shared.config, alias=dedicated_alias(self._shared.config.alias, tenant_id)
                )
                index = self._dedicated[tenant_id] = OpenSearchMemoryIndex(cfg, self._shared.client)
            return index

    def _all(self) -> list[OpenSearchMemoryIndex]:
        return [self._shared, *(self.for_tenant(t) for t in sorted(self._dedicated_ids))]

    def _routed(
        self, docs: Sequence[IndexDocument]
    ) -> list[tuple[OpenSearchMemoryIndex, list[IndexDocument]]]:
        """`docs` grouped by the index of their tenant, in their order within each index."""
        groups: dict[str, list[IndexDocument]] = defaultdict(list)
        for doc in docs:
            tenant = doc.memory.tenant_id
            groups[tenant if tenant in self._dedicated_ids else ""].append(doc)
        return [
            (self.for_tenant(key) if key else self._shared, batch) for key, batch in sorted(groups.items())
        ]

    # -- schema and versions: every index ---------------------------------------------------

    def ensure_schema(self) -> None:
        """`OpenSearchMemoryIndex.ensure_schema` for the shared index and each dedicated one."""
        for index in self._all():
            index.ensure_schema()

    def current_version(self) -> int | None:
        """The highest version any index is at (so that a rebuild's next version is new everywhere)."""
        versions = [v for v in (ix.current_version() for ix in self._all()) if v is not None]
        return max(versions) if versions else None

    def create_version(self, version: int) -> str:
        """Create `version` in every index; returns the shared index's name."""
        for index in self._all()[1:]:
            index.create_version(version)
        return self._shared.create_version(version)

    def upsert_into(self, version: int, docs: Sequence[IndexDocument]) -> None:
        for index, batch in self._routed(docs):
            index.upsert_into(version, batch)

    def switch_alias(self, version: int) -> None:
        """Point every alias at its index of `version` (one alias after another, each atomically)."""
        for index in self._all():
            index.switch_alias(version)

    def drop_version(self, version: int) -> None:
        for index in self._all():
            index.drop_version(version)

    # -- MemoryIndex: the tenant's index ----------------------------------------------------

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        for index, batch in self._routed(docs):
            index.upsert(batch)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        self.for_tenant(tenant_id).delete(tenant_id, memory_ids)

    def erase(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        self.for_tenant(tenant_id).erase(tenant_id, memory_ids)

    def search(self, query: IndexQuery) -> ChannelHits:
        return self.for_tenant(query.tenant_id).search(query)

    def count(self, tenant_id: str) -> int:
        return self.for_tenant(tenant_id).count(tenant_id)

    def versions(self, tenant_id: str, cursor: str | None = None, limit: int = 1000) -> IndexedVersions:
        return self.for_tenant(tenant_id).versions(tenant_id, cursor, limit)

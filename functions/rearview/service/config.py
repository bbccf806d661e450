"""`ServiceConfig`: the tunables of `MemoryService`, whose defaults are the documented behaviour."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rearview.service.policy import (
    DEFAULT_DECAY,
    DEFAULT_REINFORCEMENT,
    DEFAULT_RETENTION,
    DecayPolicy,
    ReinforcementPolicy,
    RetentionPolicy,
    TenantPolicy,
    policy_for,
)
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy
from rearview.service.write.secrets import SecretsPolicy


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """Tunables of the service; the defaults are the documented behaviour."""

    near_duplicate_threshold: float = 0.93
    """Cosine similarity at or above which a write merges into an existing memory."""
    fallback_scan_limit: int = 500
    """How many recent memories a degraded (store-only) search reads at most."""
    ranking: RankingPolicy = DEFAULT_RANKING
    retention: RetentionPolicy = DEFAULT_RETENTION
    reinforcement: ReinforcementPolicy = DEFAULT_REINFORCEMENT
    decay: DecayPolicy = DEFAULT_DECAY
    tenant_policies: Mapping[str, TenantPolicy] = field(default_factory=dict)
    """Per-tenant retention and decay; tenants not listed use `retention` and `decay`."""
    query_view: float = 0.0
    """The weight of a standalone memory's query view in its content's vector (`indexing.embed_texts`):
    `normalize(passage + query_view x query)`. 0: passages only; e5: bootstrap's `QUERY_VIEWS`."""
    query_centring: float = 0.0
    """How much of its script's mean question a search's query vector loses (`centring.QueryCentring`):
    `normalize(query - query_centring x mean)`. 0: the query as embedded; e5: bootstrap's
    `QUERY_CENTRINGS`. Centred cosines sit lower: pair it with the centred space's
    `RankingPolicy.cosine_floor` (bootstrap's `COSINE_FLOORS`), or a one-channel search scores none."""
    conflict_min_similarity: float = 0.86
    """Cosine from which an older memory may be a write's unlinked conflict (`write/conflicts.py`);
    e5's scale (bootstrap's `CONFLICT_MIN_SIMILARITIES` per vector space)."""
    contradiction_check: bool = True
    """With a language model, ask it whether a new memory contradicts a similar one (then supersede)."""
    contradiction_min_similarity: float = 0.75
    """Cosine similarity from which an existing memory is a contradiction candidate."""
    contradiction_candidates: int = 3
    """How many of the most similar memories the model judges per write, at most."""
    tenant_ingest_concurrency: int = 2
    """`ingest` calls one tenant may run at once (the next is refused with `BusyError`): one tenant's
    bulk ingest never holds every worker thread and the embedder's document turns."""
    as_of_days: float = 90.0
    """How far back `memory_search(as_of=...)` may ask: an earlier time is an error naming the earliest
    allowed, not a partial answer (the lifecycle archives memories unused for months: docs/ranking.md)."""
    secrets: SecretsPolicy = "refuse"
    """Content that holds an obvious credential (`write/secrets.py`): `refuse`d, stored with a
    `warn`ing, or `allow`ed."""

    def policy(self, tenant_id: str) -> TenantPolicy:
        """The retention and decay `tenant_id` lives by."""
        return policy_for(tenant_id, self.tenant_policies, self.retention, self.decay)

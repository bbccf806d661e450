"""Who inside a tenant may see a memory: the one place where the service applies `visibility`.

A `private` memory exists only for the agent that wrote it (`Memory.visible_to`). The service
reaches memories two ways, and each goes through here:

- by id (get, history, update, supersede, restore, forget by ids): `load_visible` answers
  another agent's private memory with `NotFoundError`, exactly as it answers an unknown id, so
  neither its existence nor its status leaks;
- by filter (search, forget by filter, summarize, profile): `scoped` pins the filter to the
  caller's agent, so store and index queries match only what it may see, whatever agent the
  filter named before.

Idempotency keys are per agent too (`agent_idempotency_key`): two agents sending the same key
make two writes, and a replay answers only the agent that made the first one.

The caller's agent is whatever the API layer established: bound by the credential when the key
or token names one (`rearview.shared.principal`), else the `agent_id` the caller gave.
"""

from __future__ import annotations

from collections.abc import Sequence

from rearview.errors import NotFoundError
from rearview.limits import MemoryId, checked
from rearview.models import Memory, MemoryFilter
from rearview.ports import MemoryStore


def load_visible(
    store: MemoryStore, tenant_id: str, memory_id: str, agent_id: str, field: str = "memory_id"
) -> Memory:
    """The memory if `agent_id` may see it (any status); NotFoundError if absent, expired or not visible."""
    memory = store.get(tenant_id, checked(MemoryId, memory_id, field))
    if memory is None or not memory.visible_to(agent_id):
        raise NotFoundError(memory_id)
    return memory


def load_all_visible(
    store: MemoryStore, tenant_id: str, memory_ids: Sequence[str], agent_id: str, field: str
) -> list[Memory]:
    """Each of `memory_ids` (deduplicated, in order); NotFoundError for the first `agent_id` may not see."""
    ids = [checked(MemoryId, i, field) for i in dict.fromkeys(memory_ids)]
    found = {m.id: m for m in store.get_many(tenant_id, ids) if m.visible_to(agent_id)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(missing[0])
    return [found[i] for i in ids]


def scoped(flt: MemoryFilter, agent_id: str) -> MemoryFilter:
    """`flt` restricted to what `agent_id` may see (replacing any agent it named)."""
    return flt.model_copy(update={"agent_id": agent_id})


def agent_idempotency_key(agent_id: str, key: str) -> str:
    """The key as stored: scoped to the agent, unambiguously (the agent's length prefixes it)."""
    return f"{len(agent_id)}:{agent_id}:{key}"

"""Who a credential authenticates: a tenant and, when the credential is bound to one, an agent.

The tenant always comes from the credential. The agent comes from it too when the credential
names one (an API key's table entry, a JWT agent claim): a tool call may then act as that agent
only. A credential without an agent lets the caller say which agent it is (`agent_id`), which
keeps `private` memories apart between cooperating agents but is no barrier against another
holder of the same key: give each agent its own bound key for that.

Key maps (`[api_keys]` in `config.toml`, the Lambda's JSON key map) give each key either a
tenant id (`"key" = "alice"`) or a table (`"key" = { tenant = "alice", agent = "claude-code" }`);
`principal_from_entry` reads both. A verified JWT names its principal in claims
(`principal_from_token`), whoever verified it: API Gateway on Lambda, `rearview serve` locally.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MAX_PRINCIPAL_ID_CHARS = 256
"""The longest tenant or agent id a credential may carry."""

ENTRY_FIELDS = frozenset({"tenant", "agent"})
"""The keys of a key map's table entry; `tenant` is required."""


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: its tenant, and its agent when the credential is bound to one."""

    tenant_id: str
    agent_id: str | None = None


def is_principal_id(value: object) -> bool:
    """A usable tenant or agent id: a string with non-blank text, at most `MAX_PRINCIPAL_ID_CHARS` long."""
    return isinstance(value, str) and bool(value.strip()) and len(value) <= MAX_PRINCIPAL_ID_CHARS


def principal_from_entry(value: object) -> Principal | None:
    """The principal a key map entry names: a tenant id, or a `{tenant, agent?}` table; None if malformed.

    Malformed: not a usable id, a table without `tenant`, with keys other than `tenant` and
    `agent`, or with a value that is not a usable id.
    """
    if is_principal_id(value):
        return Principal(str(value))
    if not isinstance(value, Mapping) or "tenant" not in value or not set(value) <= ENTRY_FIELDS:
        return None
    tenant, agent = value["tenant"], value.get("agent")
    if not is_principal_id(tenant) or (agent is not None and not is_principal_id(agent)):
        return None
    return Principal(str(tenant), None if agent is None else str(agent))


def principal_from_token(
    claims: Mapping[str, object], tenant_claim: str, agent_claim: str | None = None
) -> Principal | None:
    """The principal a verified token's claims name, None when they name no usable one.

    The tenant is `claims[tenant_claim]`; with `agent_claim`, the agent is `claims[agent_claim]`
    and a token without it is refused (None), so it cannot act as any agent it likes. Only a
    usable id (`is_principal_id`) counts: lists, numbers and blank strings do not.
    """
    tenant = claims.get(tenant_claim)
    if not is_principal_id(tenant):
        return None
    if agent_claim is None:
        return Principal(str(tenant))
    agent = claims.get(agent_claim)
    return Principal(str(tenant), str(agent)) if is_principal_id(agent) else None

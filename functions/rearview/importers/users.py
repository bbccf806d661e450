"""`--per-user`: where the records of an export that holds several users' memories go.

mem0 and OpenMemory keep every user's memories in one store, each record naming its `user_id`.
Written as they are into one tenant, as shared memories, every agent would recall one user's facts
to another ("what is my cat called?" answering with someone else's cat). So an export that holds
more than one user is refused unless the caller says how to keep them apart:

- `tenant`: each user's records go to a tenant named after the user (`alice`, `bob`): nothing is
  shared between them, and each is searched, exported and forgotten on its own;
- `agent`: every record goes to the one tenant, written by an agent named after its user with
  private visibility: only that agent sees it (the record's own agent, if it had one, is kept in
  metadata as `source_agent_id`).

Records without a user stay where they would go without the option (the tenant, their agent,
shared). A file with one user (or none) imports as it always did, with or without the option.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from rearview.errors import InvalidInputError
from rearview.importers.records import Candidate, Record
from rearview.models import Visibility

MAX_NAMED = 10
"""Users named in the refusal of a file that holds several; the rest are counted."""


class PerUser(StrEnum):
    """How `--per-user` keeps the users of one export apart."""

    TENANT = "tenant"
    AGENT = "agent"


@dataclass(frozen=True)
class Batch:
    """The records one tenant receives."""

    tenant: str
    records: list[Record]


def users_of(records: Iterable[Record]) -> list[str]:
    """The distinct users the records belong to, sorted."""
    return sorted({r.user for r in records if isinstance(r, Candidate) and r.user})


def batches(records: Iterable[Record], path: Path, tenant: str, per_user: PerUser | None) -> list[Batch]:
    """The records split by tenant as `per_user` says; `tenant` receives those without a user.

    InvalidInputError naming the file, the users found and the option to pass when the records
    belong to several users and `per_user` is None.
    """
    listed = list(records)
    users = users_of(listed)
    if per_user is None:
        if len(users) > 1:
            raise InvalidInputError(str(path), several_users(users))
        return [Batch(tenant, listed)]
    if per_user is PerUser.AGENT:
        return [Batch(tenant, [_private_to_user(r) for r in listed])]
    split: dict[str, list[Record]] = {}
    for record in listed:
        user = record.user if isinstance(record, Candidate) else None
        split.setdefault(user or tenant, []).append(record)
    return [Batch(name, split[name]) for name in sorted(split)]


def several_users(users: list[str]) -> str:
    """The one-line refusal of a file with several users: who they are, and what to pass."""
    named = ", ".join(repr(u) for u in users[:MAX_NAMED])
    more = f" and {len(users) - MAX_NAMED} more" if len(users) > MAX_NAMED else ""
    return (
        f"holds the memories of {len(users)} users ({named}{more}): pass --per-user tenant "
        "(a tenant for each user) or --per-user agent (a private agent for each user), so that "
        "no user recalls another's memories"
    )


def _private_to_user(record: Record) -> Record:
    if not isinstance(record, Candidate) or not record.user:
        return record
    fields = dict(record.fields)
    metadata = dict(fields.get("metadata", {}))
    if fields.get("agent_id"):
        metadata["source_agent_id"] = fields["agent_id"]
    fields.update(agent_id=record.user, visibility=Visibility.PRIVATE, metadata=metadata)
    return replace(record, fields=fields)

"""The records a write makes: a new memory from its draft, or its writer's duplicate reinforced by it.

Pure functions of the request, the draft and the service's `ServiceConfig` (retention,
reinforcement): they read and write nothing, `Writer` commits what they return.
"""

from __future__ import annotations

from datetime import datetime

from rearview.models import Cue, Memory, WriteRequest, united_cues
from rearview.service.config import ServiceConfig
from rearview.service.write.decision import Draft
from rearview.shared.ids import new_id


def new_memory(tenant_id: str, draft: Draft, config: ServiceConfig, embedding_model: str) -> Memory:
    """The memory a created write stores: the draft's request, stamped, keyed and retained by `config`."""
    req, now = draft.req, draft.now
    born = draft.born or now  # an import's own time: age, retention and decay count from it
    return Memory(
        id=new_id(now),
        tenant_id=tenant_id,
        type=req.type,
        content=req.content,
        agent_id=req.agent_id,
        session_id=req.session_id,
        visibility=req.visibility,
        tags=req.tags,
        entities=req.entities,
        metadata=req.metadata,
        importance=req.importance,
        confidence=req.confidence,
        strength=config.reinforcement.initial_strength,
        created_at=born,
        updated_at=born,
        last_accessed_at=born,
        event_time=req.event_time or born,
        expires_at=config.policy(tenant_id).retention.expires_at(
            req.type, req.importance, req.ttl_days, born
        ),
        content_hash=draft.digest,
        scope_key=draft.scope_key,
        idempotency_key=req.idempotency_key,
        derived_from=req.derived_from,
        embedding_model=embedding_model,
        source=req.source,
        speaker=req.speaker,
        source_agents=req.source_agents,
        source_speakers=req.source_speakers,
        cues=[Cue(text=t, by=req.agent_id) for t in req.cues],
    )


def merged_memory(
    tenant_id: str, existing: Memory, req: WriteRequest, now: datetime, config: ServiceConfig
) -> Memory:
    """`existing` reinforced by its writer's duplicate: labels and metadata united, higher scores kept.

    Only ever the writer's own memory (`decide`): another agent's duplicate is corroborated.
    """
    cues = united_cues(existing.cues, [Cue(text=t, by=req.agent_id) for t in req.cues])
    importance = max(existing.importance, req.importance)
    retention = config.policy(tenant_id).retention
    return existing.model_copy(
        update={
            "strength": config.reinforcement.reinforced(existing.strength, config.reinforcement.merge_boost),
            "importance": importance,
            "confidence": max(existing.confidence, req.confidence),
            "cues": cues,
            "tags": list(dict.fromkeys([*existing.tags, *req.tags])),
            "entities": list(dict.fromkeys([*existing.entities, *req.entities])),
            "metadata": {**existing.metadata, **req.metadata},
            "updated_at": now,
            "last_accessed_at": now,
            "expires_at": _later(
                existing.expires_at, retention.expires_at(existing.type, importance, req.ttl_days, now)
            ),
            "version": existing.version + 1,
        }
    )


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    """The later expiry; None (never expires) wins."""
    if a is None or b is None:
        return None
    return max(a, b)

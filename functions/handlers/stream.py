"""DynamoDB Streams consumer for TTL expirations (`handlers.stream.handler`).

The event source mapping's filter lets only TTL deletions through (`eventName` REMOVE by the
principal `dynamodb.amazonaws.com`); the handler checks again, so an unfiltered batch (a
`sam local invoke`, a misconfigured mapping) never treats an application delete as an expiry.

Each expired *memory* item (other TTL'd items, dedup and idempotency lookups, are skipped) goes
to `rearview.service.lifecycle.on_expired`: the old image is archived with its history, a stub
takes its place, and it leaves the search index. That call is idempotent, because a batch can
be delivered more than once.

Failures are reported per record (`ReportBatchItemFailures`) by Powertools' `BatchProcessor`:
processing stops at the first failing record, which is reported with every record after it (not
attempted), so Lambda retries from there in stream order; after the mapping's retries the batch
goes to the stream dead-letter queue. A failing record without a sequence number is reported with
a null `itemIdentifier`, which Lambda treats as a failure of the whole batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)

from handlers._service import lambda_service, process_checkpoints

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from rearview.models import Memory
    from rearview.service.memory_service import MemoryService

__all__ = ["EarlierRecordFailedError", "expired_memory", "handler", "is_ttl_removal", "process"]

logger = Logger()  # service name: POWERTOOLS_SERVICE_NAME (template.yaml sets it)

TTL_PRINCIPAL = "dynamodb.amazonaws.com"


def is_ttl_removal(record: DynamoDBRecord) -> bool:
    """True for a REMOVE made by DynamoDB's TTL process (not by the application)."""
    identity = record.user_identity
    return (
        record.event_name == DynamoDBRecordEventName.REMOVE
        and identity.get("type") == "Service"
        and identity.get("principalId") == TTL_PRINCIPAL
    )


def expired_memory(record: DynamoDBRecord) -> Memory | None:
    """The memory in the record's old image, or None when the item is not a memory."""
    from rearview.backends.dynamodb.codec import is_memory_item, memory_from_item

    stream = record.dynamodb
    image = stream.raw_event.get("OldImage") if stream is not None else None
    if not isinstance(image, Mapping) or not is_memory_item(image):
        return None
    return memory_from_item(image)


class EarlierRecordFailedError(Exception):
    """A record not attempted because one before it failed (it is retried with that one, in order)."""


def process(event: Mapping[str, Any], service: Callable[[], MemoryService]) -> dict[str, Any]:
    """Handle a batch; returns `{"batchItemFailures": [...]}` (empty when every record succeeded)."""
    from rearview.service.lifecycle import on_expired

    processor = BatchProcessor(EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
    actions: dict[str, int] = {}

    def expire(record: DynamoDBRecord) -> str:
        if processor.fail_messages:  # keep stream order: nothing after a failure is attempted
            raise EarlierRecordFailedError(record.dynamodb.sequence_number if record.dynamodb else None)
        try:
            memory = expired_memory(record) if is_ttl_removal(record) else None
            action = (
                "skipped" if memory is None else on_expired(service(), memory, process_checkpoints()).action
            )
        except Exception:
            sequence = record.dynamodb.sequence_number if record.dynamodb is not None else None
            logger.exception("expiring a memory failed", extra={"sequence_number": sequence})
            raise
        actions[action] = actions.get(action, 0) + 1
        return action

    response = process_partial_response(event=dict(event), record_handler=expire, processor=processor)
    logger.info("batch done", extra={"actions": actions, "failed": len(processor.fail_messages)})
    return dict(response)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (`handlers.stream.handler`)."""
    return process(event, lambda_service)

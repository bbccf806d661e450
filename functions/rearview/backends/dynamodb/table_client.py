"""`TableClient`: one table's SDK calls, with errors translated at the boundary and bounded retries.

A client created here uses botocore's standard retry mode for every call; transactions and batch
calls add their own bounded backoff (`RetryPolicy`) for what botocore does not retry
(transaction conflicts, throttled items inside a cancelled transaction, unprocessed batch keys).
Every method raises only `rearview.errors` types, except `transact`'s `TransactionCancelledError`
(a failed condition, for the caller to map to its own domain error).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from rearview.errors import InvalidInputError, StoreError
from rearview.shared.lazy import Lazy
from rearview.shared.retry import RetryPolicy

if TYPE_CHECKING:
    from botocore.exceptions import ClientError
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        KeysAndAttributesTypeDef,
        QueryOutputTypeDef,
        TransactWriteItemTypeDef,
        WriteRequestTypeDef,
    )

    Item = dict[str, AttributeValueTypeDef]
    Key = Mapping[str, AttributeValueTypeDef]

_BATCH_GET_MAX: Final = 100
_BATCH_WRITE_MAX: Final = 25
_THROTTLE_CODES: Final = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TransactionInProgressException",
        "InternalServerError",
        "ServiceUnavailable",
    }
)
_RETRYABLE_REASONS: Final = frozenset(
    {"ThrottlingError", "TransactionConflict", "ProvisionedThroughputExceeded"}
)

_T = TypeVar("_T")


class TransactionCancelledError(Exception):
    """A transaction refused by a condition (never retried); `reasons` align with the actions."""

    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        super().__init__("transaction cancelled by a condition")
        self.reasons = reasons


def error_code(exc: ClientError) -> str:
    """The AWS error code of a `ClientError` (empty when it has none)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def store_error(operation: str, exc: Exception) -> StoreError | InvalidInputError:
    """The `rearview.errors` type for an SDK failure of `operation`."""
    from botocore.exceptions import ClientError

    if not isinstance(exc, ClientError):
        return StoreError(f"DynamoDB {operation} failed: {exc}")
    code = error_code(exc)
    message = str(exc.response.get("Error", {}).get("Message", ""))
    if code == "ValidationException" and "size" in message.lower():
        return InvalidInputError("memory", f"is too large for DynamoDB ({message}); the limit is 400 KB")
    if code == "ResourceNotFoundException":
        return StoreError(
            f"DynamoDB table not found during {operation}: deploy template.yaml or ensure_schema()"
        )
    return StoreError(f"DynamoDB {operation} failed ({code}): {message}")


class TableClient:
    """The calls the adapters make on one table. No I/O until the first call."""

    def __init__(self, table_name: str, client: DynamoDBClient | None, retry: RetryPolicy) -> None:
        self.name = table_name
        self._client = Lazy(_create_client, client)
        self._retry = retry

    @property
    def client(self) -> DynamoDBClient:
        """The boto3 client: the one given, or one created (standard retries) on first use."""
        return self._client.get()

    def call(self, operation: str, fn: Callable[..., _T], **kwargs: Any) -> _T:
        """One SDK call, its errors translated at the boundary."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise store_error(operation, exc) from exc

    def get_item(self, key: Key) -> Item | None:
        """One item by key (strongly consistent), or None."""
        out = self.call("GetItem", self.client.get_item, TableName=self.name, Key=key, ConsistentRead=True)
        return out.get("Item")

    def put_item(self, item: Item) -> None:
        self.call("PutItem", self.client.put_item, TableName=self.name, Item=item)

    def delete_item(self, key: Key) -> None:
        self.call("DeleteItem", self.client.delete_item, TableName=self.name, Key=key)

    def query_page(self, params: Mapping[str, Any]) -> QueryOutputTypeDef:
        """One page of a Query (the request must name this table)."""
        return self.call("Query", self.client.query, **params)

    def transact(self, actions: list[TransactWriteItemTypeDef]) -> None:
        """TransactWriteItems with bounded retries; `TransactionCancelledError` on a failed condition.

        One client request token for every attempt makes a retry of a transaction that did
        land (but whose answer was lost) a no-op instead of a second write.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        token = uuid.uuid4().hex
        for attempt in range(self._retry.max_attempts):
            try:
                self.client.transact_write_items(TransactItems=actions, ClientRequestToken=token)
                return
            except ClientError as exc:
                reasons = [dict(r) for r in exc.response.get("CancellationReasons", [])]
                codes = {str(r.get("Code", "None")) for r in reasons}
                if "ConditionalCheckFailed" in codes:
                    raise TransactionCancelledError(reasons) from exc
                if not _retryable(error_code(exc), codes) or attempt + 1 == self._retry.max_attempts:
                    raise store_error("TransactWriteItems", exc) from exc
            except BotoCoreError as exc:
                raise store_error("TransactWriteItems", exc) from exc
            self._retry.backoff(attempt)

    def batch_get(
        self, keys: Sequence[Key], projection: Sequence[str] | None = None, *, consistent: bool = True
    ) -> Iterator[Item]:
        """The items that exist among `keys` (consistent unless told): by 100, unprocessed keys retried."""
        for start in range(0, len(keys), _BATCH_GET_MAX):
            request: KeysAndAttributesTypeDef = {
                "Keys": list(keys[start : start + _BATCH_GET_MAX]),
                "ConsistentRead": consistent,
            }
            if projection is not None:
                request["ProjectionExpression"] = ", ".join(f"#{a}" for a in projection)
                request["ExpressionAttributeNames"] = {f"#{a}": a for a in projection}
            yield from self._batch_get_chunk(request)

    def _batch_get_chunk(self, request: KeysAndAttributesTypeDef) -> Iterator[Item]:
        pending: KeysAndAttributesTypeDef | None = request
        for attempt in range(self._retry.max_attempts):
            if pending is None:
                return
            out = self.call("BatchGetItem", self.client.batch_get_item, RequestItems={self.name: pending})
            yield from out.get("Responses", {}).get(self.name, [])
            unprocessed = out.get("UnprocessedKeys", {}).get(self.name)
            pending = (
                {**request, "Keys": unprocessed["Keys"]} if unprocessed and unprocessed["Keys"] else None
            )
            if pending is not None and attempt + 1 < self._retry.max_attempts:
                self._retry.backoff(attempt)
        if pending is not None:
            raise StoreError(
                f"DynamoDB BatchGetItem left keys unprocessed after {self._retry.max_attempts} attempts"
            )

    def batch_delete(self, keys: Sequence[Key]) -> None:
        """Delete `keys`: BatchWriteItem by 25, unprocessed items retried. Absent keys are no-ops."""
        for start in range(0, len(keys), _BATCH_WRITE_MAX):
            requests: list[WriteRequestTypeDef] = [
                {"DeleteRequest": {"Key": key}} for key in keys[start : start + _BATCH_WRITE_MAX]
            ]
            self._batch_write_requests(requests)

    def batch_put(self, items: Sequence[Item]) -> None:
        """Put `items` (unconditionally): BatchWriteItem by 25, unprocessed items retried."""
        for start in range(0, len(items), _BATCH_WRITE_MAX):
            requests: list[WriteRequestTypeDef] = [
                {"PutRequest": {"Item": item}} for item in items[start : start + _BATCH_WRITE_MAX]
            ]
            self._batch_write_requests(requests)

    def _batch_write_requests(self, requests: list[WriteRequestTypeDef]) -> None:
        """One BatchWriteItem chunk, its unprocessed items re-sent with bounded backoff.

        Not boto3's `Table.batch_writer`: it needs a `dynamodb` resource, which makes a second
        client beside the injected one (tests and callers inject theirs), and it re-sends
        unprocessed items at once and without bound instead of backing off.
        """
        pending = requests
        for attempt in range(self._retry.max_attempts):
            out = self.call("BatchWriteItem", self.client.batch_write_item, RequestItems={self.name: pending})
            pending = []
            for left in out.get("UnprocessedItems", {}).get(self.name, []):
                if "DeleteRequest" in left:
                    pending.append({"DeleteRequest": {"Key": left["DeleteRequest"]["Key"]}})
                elif "PutRequest" in left:
                    pending.append({"PutRequest": {"Item": left["PutRequest"]["Item"]}})
            if not pending:
                return
            if attempt + 1 < self._retry.max_attempts:
                self._retry.backoff(attempt)
        raise StoreError(
            f"DynamoDB BatchWriteItem left items unprocessed after {self._retry.max_attempts} attempts"
        )


def _create_client() -> DynamoDBClient:
    import boto3
    from botocore.config import Config

    return boto3.client("dynamodb", config=Config(retries={"mode": "standard", "max_attempts": 5}))


def _retryable(code: str, reasons: set[str]) -> bool:
    if code in _THROTTLE_CODES:
        return True
    return code == "TransactionCanceledException" and bool(reasons & _RETRYABLE_REASONS)

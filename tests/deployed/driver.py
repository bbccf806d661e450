"""The AWS services around the functions, as far as the deployed tier needs them, driven by the template.

- `HttpApi`: a loopback HTTP server standing in for the API Gateway HTTP API: it matches each
  request against the template's route keys (unmatched: 404 `{"message":"Not Found"}`, as API
  Gateway answers), turns it into a payload-2.0 event, invokes the MCP function and turns the
  proxy result back into the HTTP response (a function error: 500 `Internal Server Error`).
  MCP clients (the official SDK, both protocol eras) talk to it as to the deployed URL.
- `Scheduler`: delivers each schedule's `Input` to the jobs function as an asynchronous
  invocation: a function error is retried `EventInvokeConfig.MaximumRetryAttempts` times, then
  the invocation record goes to the `OnFailure` destination queue (Lambda's record shape). A
  delivery that fails (the function unreachable) is retried per the schedule's `RetryPolicy`,
  then the `Input` goes to the schedule's `DeadLetterConfig` queue (Scheduler's message shape).
- `TtlProcess`: DynamoDB's TTL sweeper: deletes the items whose TTL attribute has passed at a
  given time, and remembers them so that their stream records carry the TTL service identity.
- `StreamMapping`: the event source mapping: reads moto's DynamoDB stream, applies the
  template's `FilterCriteria`, batches, invokes the stream function, honours
  `ReportBatchItemFailures` (retry from the first failed record), `BisectBatchOnFunctionError`
  and `MaximumRetryAttempts`, then sends the batch's metadata to the `OnFailure` queue.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.deployed import stack as stack_module
from tests.deployed.rie import BuiltFunction, Invocation, free_port

__all__ = ["HttpApi", "Scheduler", "StreamMapping", "TtlProcess", "matches", "route_for"]

TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
_TEXT_TYPES = ("text/", "application/json", "application/x-www-form-urlencoded", "application/xml")


# --------------------------------------------------------------------------- HTTP API


def route_for(routes: list[str], method: str, path: str) -> tuple[str, dict[str, str]] | None:
    """The route key matching a request, and its path parameters (`{proxy+}` is greedy)."""
    for key in routes:
        route_method, route_path = key.split(" ", 1)
        if route_method not in (method, "ANY"):
            continue
        if route_path == path:
            return key, {}
        if route_path.endswith("/{proxy+}"):
            prefix = route_path.removesuffix("{proxy+}")
            if path.startswith(prefix) and len(path) > len(prefix):
                return key, {"proxy": path[len(prefix) :]}
    return None


def http_api_event(
    route_key: str,
    path_parameters: dict[str, str],
    method: str,
    target: str,
    headers: list[tuple[str, str]],
    body: bytes,
) -> dict[str, Any]:
    """The payload-2.0 event API Gateway sends for one request."""
    split = urlsplit(target)
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        lower = name.lower()
        if lower == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        joined[lower] = f"{joined[lower]},{value}" if lower in joined else value
    joined.setdefault("x-forwarded-proto", "https")
    joined.setdefault("x-forwarded-for", "127.0.0.1")
    now = datetime.now(UTC)
    content_type = joined.get("content-type", "")
    textual = not body or content_type.startswith(_TEXT_TYPES) or content_type.endswith(("+json", "+xml"))
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": split.path,
        "rawQueryString": split.query,
        "headers": joined,
        "requestContext": {
            "accountId": stack_module.ACCOUNT,
            "apiId": "deployedtier",
            "domainName": joined.get("host", "127.0.0.1"),
            "domainPrefix": "deployedtier",
            "http": {
                "method": method,
                "path": split.path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": route_key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": not textual,
    }
    if cookies:
        event["cookies"] = cookies
    if split.query:
        params: dict[str, str] = {}
        for name, value in parse_qsl(split.query, keep_blank_values=True):
            params[name] = f"{params[name]},{value}" if name in params else value
        event["queryStringParameters"] = params
    if path_parameters:
        event["pathParameters"] = path_parameters
    if body:
        event["body"] = body.decode() if textual else base64.b64encode(body).decode()
    return event


def http_response(invocation: Invocation) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body API Gateway makes of a function's result (payload format 2.0)."""
    if invocation.error:
        return 500, [("content-type", "application/json")], b'{"message":"Internal Server Error"}'
    result = invocation.payload
    if not isinstance(result, dict) or "statusCode" not in result:  # API Gateway infers a 200 JSON answer
        return 200, [("content-type", "application/json")], json.dumps(result).encode()
    headers = [(k, str(v)) for k, v in (result.get("headers") or {}).items()]
    headers += [(k, str(v)) for k, values in (result.get("multiValueHeaders") or {}).items() for v in values]
    headers += [("set-cookie", c) for c in result.get("cookies") or []]
    body = result.get("body") or ""
    raw = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode()
    return int(result["statusCode"]), headers, raw


class HttpApi:
    """The HTTP API in front of one function (see the module docstring); `url` is its base URL."""

    def __init__(self, function: BuiltFunction, routes: list[str]) -> None:
        self.function = function
        self.routes = routes
        self.events: list[dict[str, Any]] = []  # every event sent, for assertions
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path
                match = route_for(api.routes, self.command, path)
                if match is None:
                    status, headers, raw = (
                        404,
                        [("content-type", "application/json")],
                        b'{"message":"Not Found"}',
                    )
                else:
                    event = http_api_event(
                        match[0], match[1], self.command, self.path, list(self.headers.items()), body
                    )
                    api.events.append(event)
                    status, headers, raw = http_response(api.function.invoke(event))
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_OPTIONS = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @contextmanager
    def running(self) -> Iterator[HttpApi]:
        self._thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()


# --------------------------------------------------------------------------- dead-letter records


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _function_arn(function: BuiltFunction) -> str:
    name = f"rearview-deployed-{function.spec.logical_id}"
    return f"arn:aws:lambda:{stack_module.REGION}:{stack_module.ACCOUNT}:function:{name}:$LATEST"


def _queue_url(sqs: Any, arn: str) -> str:
    url: str = sqs.get_queue_url(QueueName=arn.rsplit(":", 1)[1])["QueueUrl"]
    return url


# --------------------------------------------------------------------------- Scheduler


@dataclass(frozen=True)
class AsyncOutcome:
    """What became of one asynchronous invocation (`attempts` empty: never delivered)."""

    attempts: list[Invocation]
    dead_lettered: bool
    deliveries: int = 1

    @property
    def result(self) -> Any:
        return self.attempts[-1].payload


class Scheduler:
    """EventBridge Scheduler + Lambda's asynchronous invocation for one function's schedules."""

    def __init__(self, function: BuiltFunction, sqs: Any) -> None:
        self.function = function
        self.sqs = sqs
        self.schedules = {s.name.rsplit("-", 1)[-1]: s for s in function.spec.schedules}

    def fire(self, name: str) -> AsyncOutcome:
        """Deliver the schedule's `Input` (`name`: decay, archive, reconcile) as the template says."""
        schedule = self.schedules[name]
        error: OSError | None = None
        for delivery in range(1, schedule.retry_attempts + 2):
            try:
                outcome = self.invoke_async(dict(schedule.input))
            except OSError as exc:  # the invoke itself failed: Scheduler retries, then dead-letters
                error = exc
                continue
            return AsyncOutcome(outcome.attempts, outcome.dead_lettered, deliveries=delivery)
        if schedule.dead_letter_queue is not None:
            self.sqs.send_message(
                QueueUrl=_queue_url(self.sqs, schedule.dead_letter_queue),
                MessageBody=json.dumps(schedule.input),
                MessageAttributes={
                    "ERROR_CODE": {"DataType": "String", "StringValue": "TargetUnreachable"},
                    "ERROR_MESSAGE": {"DataType": "String", "StringValue": str(error)[:256]},
                    "RETRY_ATTEMPTS": {"DataType": "Number", "StringValue": str(schedule.retry_attempts)},
                    "SCHEDULE_ARN": {
                        "DataType": "String",
                        "StringValue": f"arn:aws:scheduler:{stack_module.REGION}:{stack_module.ACCOUNT}"
                        f":schedule/default/{schedule.name}",
                    },
                    "TARGET_ARN": {"DataType": "String", "StringValue": _function_arn(self.function)},
                },
            )
        return AsyncOutcome(
            [], dead_lettered=schedule.dead_letter_queue is not None, deliveries=schedule.retry_attempts + 1
        )

    def invoke_async(self, event: dict[str, Any]) -> AsyncOutcome:
        """Invoke; on a function error retry as EventInvokeConfig says, then dead-letter the record."""
        spec = self.function.spec
        attempts = [self.function.invoke(event)]
        while attempts[-1].error and len(attempts) <= spec.async_retry_attempts:
            attempts.append(self.function.invoke(event))
        if not attempts[-1].error:
            return AsyncOutcome(attempts, dead_lettered=False)
        if spec.async_dead_letter_queue is None:
            return AsyncOutcome(attempts, dead_lettered=False)
        record = {
            "version": "1.0",
            "timestamp": _now_iso(),
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": _function_arn(self.function),
                "condition": "RetriesExhausted",
                "approximateInvokeCount": len(attempts),
            },
            "requestPayload": event,
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": "Unhandled",
            },
            "responsePayload": attempts[-1].payload,
        }
        self.sqs.send_message(
            QueueUrl=_queue_url(self.sqs, spec.async_dead_letter_queue), MessageBody=json.dumps(record)
        )
        return AsyncOutcome(attempts, dead_lettered=True)


# --------------------------------------------------------------------------- TTL + stream


def matches(pattern: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Lambda event filtering for the pattern forms the template uses: nested keys, lists of values.

    A key of the pattern must be present in the event; a list matches when the event's value
    equals one of its (scalar) entries. Other operators (prefix, numeric, exists) are refused
    rather than guessed.
    """
    for key, expected in pattern.items():
        if key not in event:
            return False
        actual = event[key]
        if isinstance(expected, Mapping):
            if not isinstance(actual, Mapping) or not matches(expected, actual):
                return False
        elif isinstance(expected, list):
            if any(isinstance(e, (Mapping, list)) for e in expected):
                raise NotImplementedError(f"filter operator in {key}: {expected} (not used by the template)")
            if actual not in expected:
                return False
        else:
            raise ValueError(f"filter pattern values are lists or objects, not {expected!r}")
    return True


class TtlProcess:
    """DynamoDB's TTL sweeper over moto's table (moto does not expire items itself)."""

    def __init__(self, dynamodb: Any, table: str, attribute: str) -> None:
        self.dynamodb = dynamodb
        self.table = table
        self.attribute = attribute
        self.expired: set[tuple[str, str]] = set()

    def sweep(self, at: float) -> list[tuple[str, str]]:
        """Delete every item whose TTL attribute is at or before `at` (epoch s); returns their keys."""
        deleted = []
        pages = self.dynamodb.get_paginator("scan").paginate(
            TableName=self.table,
            FilterExpression="#ttl <= :at",
            ExpressionAttributeNames={"#ttl": self.attribute},
            ExpressionAttributeValues={":at": {"N": str(int(at))}},
        )
        for page in pages:
            for item in page["Items"]:
                key = (item["pk"]["S"], item["sk"]["S"])
                self.dynamodb.delete_item(TableName=self.table, Key={"pk": item["pk"], "sk": item["sk"]})
                self.expired.add(key)
                deleted.append(key)
        return deleted


def _plain(value: Any) -> Any:
    """A boto3-parsed stream record back to its wire JSON (datetimes to epoch seconds)."""
    if isinstance(value, datetime):
        return int(value.timestamp())
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass
class StreamReport:
    delivered: int = 0  # records that passed the filter
    filtered_out: int = 0
    invocations: int = 0
    dead_lettered: int = 0  # records given up on


class StreamMapping:
    """The DynamoDB event source mapping of one function (see the module docstring)."""

    def __init__(
        self,
        function: BuiltFunction,
        streams: Any,
        sqs: Any,
        stream_arn: str,
        ttl: TtlProcess,
    ) -> None:
        (self.mapping,) = function.spec.streams
        self.function = function
        self.streams = streams
        self.sqs = sqs
        self.stream_arn = stream_arn
        self.ttl = ttl
        self._iterators: dict[str, str | None] = {}

    def _read(self) -> list[dict[str, Any]]:
        """Every record added to the stream since the last read (all shards, in order)."""
        records = []
        shards = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id not in self._iterators:
                self._iterators[shard_id] = self.streams.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            iterator = self._iterators[shard_id]
            while iterator:
                page = self.streams.get_records(ShardIterator=iterator, Limit=1000)
                for record in page["Records"]:
                    records.append({**_plain(record), "eventSourceARN": self.stream_arn, "_shard": shard_id})
                iterator = page.get("NextShardIterator")
                if not page["Records"]:
                    break
            self._iterators[shard_id] = iterator
        for record in records:
            keys = record["dynamodb"].get("Keys", {})
            key = (keys.get("pk", {}).get("S"), keys.get("sk", {}).get("S"))
            if record["eventName"] == "REMOVE" and key in self.ttl.expired:
                record["userIdentity"] = dict(TTL_IDENTITY)  # what DynamoDB adds to its TTL deletions
                self.ttl.expired.discard(key)
        return records

    def poll(self) -> StreamReport:
        """Deliver what the stream holds now; returns what happened."""
        report = StreamReport()
        passing = []
        for record in self._read():
            event = {k: v for k, v in record.items() if k != "_shard"}
            if not self.mapping.filter_patterns or any(
                matches(p, event) for p in self.mapping.filter_patterns
            ):
                passing.append(record)
            else:
                report.filtered_out += 1
        report.delivered = len(passing)
        for start in range(0, len(passing), self.mapping.batch_size):
            self._deliver(
                passing[start : start + self.mapping.batch_size],
                retries_left=self.mapping.retry_attempts,
                report=report,
            )
        return report

    def _deliver(
        self, batch: list[dict[str, Any]], retries_left: int, report: StreamReport, invokes: int = 0
    ) -> None:
        while batch:
            event = {"Records": [{k: v for k, v in r.items() if k != "_shard"} for r in batch]}
            invocation = self.function.invoke(event)
            report.invocations += 1
            invokes += 1
            failed_from = self._first_failure(batch, invocation)
            if failed_from is None:
                return
            if retries_left == 0:
                self._dead_letter(batch[failed_from:], invocation, invokes)
                report.dead_lettered += len(batch) - failed_from
                return
            retries_left -= 1
            batch = batch[failed_from:]
            if invocation.error and self.mapping.bisect_on_error and len(batch) > 1:
                half = len(batch) // 2
                self._deliver(batch[:half], retries_left, report, invokes)
                self._deliver(batch[half:], retries_left, report, invokes)
                return

    def _first_failure(self, batch: list[dict[str, Any]], invocation: Invocation) -> int | None:
        """Index of the first record to retry, None when the batch succeeded."""
        if invocation.error:
            return 0
        if not self.mapping.report_batch_item_failures:
            return None
        failures = (invocation.payload or {}).get("batchItemFailures") or []
        if not failures:
            return None
        sequences = [r["dynamodb"]["SequenceNumber"] for r in batch]
        indexes = []
        for failure in failures:
            identifier = failure.get("itemIdentifier")
            if identifier not in sequences:  # null or unknown: the whole batch failed
                return 0
            indexes.append(sequences.index(identifier))
        return min(indexes)

    def _dead_letter(self, records: list[dict[str, Any]], invocation: Invocation, invokes: int) -> None:
        if self.mapping.dead_letter_queue is None:
            return
        first, last = records[0], records[-1]
        message = {
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": _function_arn(self.function),
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": invokes,
            },
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": "Unhandled" if invocation.error else "",
            },
            "version": "1.0",
            "timestamp": _now_iso(),
            "DDBStreamBatchInfo": {
                "shardId": first["_shard"],
                "startSequenceNumber": first["dynamodb"]["SequenceNumber"],
                "endSequenceNumber": last["dynamodb"]["SequenceNumber"],
                "approximateArrivalOfFirstRecord": _iso(first["dynamodb"].get("ApproximateCreationDateTime")),
                "approximateArrivalOfLastRecord": _iso(last["dynamodb"].get("ApproximateCreationDateTime")),
                "batchSize": len(records),
                "streamArn": self.stream_arn,
            },
        }
        self.sqs.send_message(
            QueueUrl=_queue_url(self.sqs, self.mapping.dead_letter_queue), MessageBody=json.dumps(message)
        )


def _iso(epoch: Any) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(float(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def wait_for(predicate: Any, timeout_s: float = 10, interval_s: float = 0.25) -> Any:
    """Poll `predicate` until it returns a truthy value (returned) or the time runs out (None)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)

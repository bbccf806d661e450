#!/usr/bin/env python
"""DynamoDB requests per ingested message: what `memory_ingest` costs in round trips on AWS.

The first LoCoMo conversation's turns (`--turns`) are ingested one session per call into the
DynamoDB store on moto (the table from template.yaml, as the tests build it), with
the hashing embedder and the in-memory index, twice: the first ingest, then the same calls again
(a re-send, which must replay everything). Every DynamoDB operation the store's client sends is
counted (a botocore event hook); it prints the total, the count per message and per operation.
Counts, not times: moto answers in-process, so only the number of requests carries over to AWS.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/cost/ingest_requests.py [--turns 200]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from benchmarks.common.locomo import DEFAULT_DATASET, load_locomo
from benchmarks.speed.ingest_throughput import ingest_sessions
from rearview.backends.dynamodb import DynamoDBMemoryStore
from rearview.backends.memory import InMemoryMemoryIndex
from rearview.embedders.hashing import HashingEmbedder
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.fixtures.aws import REGION, create_table_kwargs, resource_properties
from tests.lifecycle_load_scenario import (
    DIMENSION,
    NOW,
    fake_aws_credentials,
    moto_without_transaction_backups,
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    turns = load_locomo(args.dataset, 1, Counter())[0].turns[: args.turns]

    sent: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        sent[model.name] += 1

    with fake_aws_credentials(REGION), mock_aws(), moto_without_transaction_backups():
        client = boto3.client("dynamodb", region_name=REGION)
        client.meta.events.register("before-call.dynamodb.*", count)
        table = create_table_kwargs(resource_properties("MemoryTable"))
        client.create_table(**table)
        clock = ManualClock(NOW)
        store = DynamoDBMemoryStore(table["TableName"], client, clock=clock)
        service = MemoryService(store, InMemoryMemoryIndex(DIMENSION), HashingEmbedder(DIMENSION), clock)
        print(f"{len(turns)} LoCoMo turns, one ingest per session, DynamoDB on moto")
        for label in ("first ingest", "re-send"):
            sent.clear()
            ingest_sessions(service, turns)
            total = sum(sent.values())
            by_operation = ", ".join(f"{name} {n}" for name, n in sent.most_common())
            print(f"{label:<13} {total:>5} requests  {total / len(turns):.2f} per message  ({by_operation})")


if __name__ == "__main__":
    main()

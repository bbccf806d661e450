"""Pins `fast_moto_transactions` (tests/fixtures/aws.py) to the moto it was written against.

The fixture swaps the `copy` name inside `moto.dynamodb.models` for the duration of one
TransactWriteItems call. If moto renames that import, stops backing tables up, or backs them
up another way, the swap silently does nothing (tests get slow, not wrong) or breaks rollback;
this test fails first, and loudly, on such an upgrade.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import pytest


def test_moto_backs_up_tables_through_the_copy_module_name() -> None:
    from moto.dynamodb import models as dynamodb_models

    assert dynamodb_models.copy is copy, (
        "moto no longer imports `copy` as a module: fix fast_moto_transactions"
    )
    source = inspect.getsource(dynamodb_models.DynamoDBBackend.transact_write_items)
    assert "copy.deepcopy(" in source, "moto's transact_write_items changed: fix fast_moto_transactions"


def test_fast_moto_transactions_copies_a_table_once_per_call(
    dynamodb_client: Any, dynamodb_table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.dynamodb.models.table import Table

    table_copies = 0
    deepcopy = copy.deepcopy

    def counting(obj: Any, memo: dict[int, Any] | None = None) -> Any:
        nonlocal table_copies
        table_copies += isinstance(obj, Table)
        return deepcopy(obj, memo)

    monkeypatch.setattr(copy, "deepcopy", counting)
    items = [
        {"Put": {"TableName": dynamodb_table, "Item": {"pk": {"S": f"T#t1#M#{i}"}, "sk": {"S": "MEMORY"}}}}
        for i in range(5)
    ]
    dynamodb_client.transact_write_items(TransactItems=items)
    assert table_copies == 1  # five actions, one backup: the swap is in effect

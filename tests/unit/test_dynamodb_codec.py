"""The DynamoDB attribute codec: boto3's TypeSerializer/TypeDeserializer with Rearview's number rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rearview.backends.dynamodb.codec import attribute_value, number_value, python_value
from rearview.errors import InvalidInputError


@pytest.mark.parametrize(
    ("value", "attribute"),
    [
        (0.1, {"N": "0.1"}),
        (3.0, {"N": "3.0"}),
        (1e20, {"N": "1E+20"}),
        (7, {"N": "7"}),
        (True, {"BOOL": True}),
        ("tea", {"S": "tea"}),
        (("a", 2), {"L": [{"S": "a"}, {"N": "2"}]}),
        (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), {"S": "2026-01-02T03:04:05.000000Z"}),
    ],
)
def test_values_encode_exactly(value: object, attribute: dict[str, object]) -> None:
    assert attribute_value(value) == attribute


@pytest.mark.parametrize("value", [0.1, 3.0, 1e20, 7, -12, True, "tea", ["a", 2, 0.5]])
def test_values_round_trip_with_their_type(value: object) -> None:
    back = python_value(attribute_value(value))
    assert back == value and type(back) is type(value)


def test_nested_maps_decode_to_plain_python() -> None:
    attribute = {"M": {"n": {"N": "2"}, "f": {"N": "2.5"}, "l": {"L": [{"NULL": True}]}}}
    assert python_value(attribute) == {"n": 2, "f": 2.5, "l": [None]}


@pytest.mark.parametrize("number", [float("nan"), float("inf"), 1e300, 1e-300])
def test_numbers_dynamodb_cannot_hold_are_refused(number: float) -> None:
    with pytest.raises(InvalidInputError) as info:
        number_value(number)
    assert info.value.field == "memory"


def test_unsupported_types_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="cannot store"):
        attribute_value(object())

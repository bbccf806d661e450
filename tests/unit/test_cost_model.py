"""docs/cost.md's tables are `cost_tables.py`'s output for the committed runs; the meters follow DynamoDB's rules."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.cost.aws_meters import IndexShape, index_write_units, read_units, write_units
from benchmarks.cost.cost_tables import (
    END,
    LIFECYCLE_END,
    LIFECYCLE_RUNS,
    LIFECYCLE_START,
    START,
    UNITS,
    lifecycle_runs,
    lifecycle_table,
    render,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_tables_are_the_scripts_output_for_the_committed_units() -> None:
    doc = (ROOT / "docs" / "cost.md").read_text(encoding="utf-8")
    committed = doc.split(START, 1)[1].split(END, 1)[0].lstrip("\n")
    units = json.loads(UNITS.read_text(encoding="utf-8"))
    assert committed == render(units)
    lifecycle = doc.split(LIFECYCLE_START, 1)[1].split(LIFECYCLE_END, 1)[0].lstrip("\n")
    assert lifecycle == lifecycle_table(lifecycle_runs(LIFECYCLE_RUNS), units)


def test_a_scale_run_replaces_the_index_size_estimate() -> None:
    units = json.loads(UNITS.read_text(encoding="utf-8"))
    mine, measured = render(units), render(units, {"bytes_per_memory": 9_999.0, "docs_per_s": 600.0})
    assert "this model's" in mine and "9,999 (the scale benchmark's)" in measured
    assert mine != measured


def test_write_and_read_units_round_as_dynamodb_documents() -> None:
    assert write_units(100, 0) == 1 and write_units(1024, 0) == 1 and write_units(1025, 0) == 2
    assert write_units(500, 3000) == 3  # the larger of before and after
    assert read_units(4096, consistent=True) == 1 and read_units(4097, consistent=True) == 2
    assert read_units(100, consistent=False) == 0.5


def test_an_index_entry_costs_only_when_the_write_touches_it() -> None:
    keys_only = IndexShape(("gsi5pk", "fade_key"), all_attributes=False)
    everything = IndexShape(("gsi1pk", "updated_key"), all_attributes=True)
    base = {"pk": {"S": "T#t#M#1"}, "sk": {"S": "MEMORY"}, "gsi1pk": {"S": "T#t"}, "updated_key": {"S": "u1"}}
    item = {**base, "gsi5pk": {"S": "T#t#DUE#decay"}, "fade_key": {"S": "f1"}, "strength": {"N": "1"}}
    touched = {**item, "strength": {"N": "1.1"}}  # a recall: no key changes
    moved = {**item, "fade_key": {"S": "f2"}}  # rescheduled
    assert index_write_units(keys_only, item, touched) == 0
    assert index_write_units(everything, item, touched) == 1
    assert index_write_units(keys_only, item, moved) == 2  # a delete and a put
    assert index_write_units(keys_only, None, item) == 1 and index_write_units(keys_only, item, None) == 1
    assert index_write_units(keys_only, base, base) == 0  # not in the index at all

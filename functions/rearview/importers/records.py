"""What a source reader yields, and the helpers every reader shares to map a record faithfully.

A reader turns one export of another memory system into `Candidate`s (a memory to write, as
`WriteRequest` fields, with the source's id) and `Skipped`s (a record deliberately not imported, and
why). It validates nothing itself: the runner builds each `WriteRequest`, so a record beyond a
limit is refused with the same error, naming the field, as any other write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rearview.errors import InvalidInputError
from rearview.limits import MAX_LABEL_CHARS, MAX_METADATA_KEYS, MAX_METADATA_VALUE_CHARS, MAX_TAGS
from rearview.shared.clock import parse_time

MetadataValue = str | int | float | bool
METADATA_BUDGET = MAX_METADATA_KEYS - 4
"""Source metadata keys kept per record: room is left for what the importer adds (`imported_from`, ...)."""


@dataclass(frozen=True)
class Candidate:
    """One source record to write: its source id (`mem0:<id>`), its `WriteRequest` fields.

    `replaces` is the source id of a record this one invalidated (a Graphiti edge's successor): the
    runner writes that one first and this one with `supersedes` naming it. `user` is the source's
    user the record belongs to (mem0's `user_id`), for `--per-user`. `aliases` are other source ids
    the same record was imported under (`zep:<uuid>` for `graphiti:<uuid>`): a run finds it by any.
    """

    source_id: str
    fields: dict[str, Any]
    replaces: str | None = None
    user: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A source record deliberately not imported, and why (deleted or invalidated at the source)."""

    source_id: str
    reason: str


@dataclass(frozen=True)
class Refused:
    """A source record that cannot be mapped (a timestamp that is not one): the error names the field."""

    source_id: str
    reason: str


Record = Candidate | Skipped | Refused
_NUMBERED = re.compile(r"#[0-9]+$")


def is_numbered(source_id: str) -> bool:
    """Whether `source_id` names a record by its place in the file (`mem0:#3`), the source giving none.

    Such an id is no identity: another file's third record is another record.
    """
    return bool(_NUMBERED.search(source_id))


def guarded(source_id: str, build: Callable[[], Record]) -> Record:
    """`build()`, or the record `Refused` with the InvalidInputError that mapping it raised."""
    try:
        return build()
    except InvalidInputError as exc:
        return Refused(source_id, str(exc))


def lenient_time(value: object, field_name: str) -> datetime | None:
    """`time_of`, None for a value that is not a time (where a time only orders records)."""
    try:
        return time_of(value, field_name)
    except InvalidInputError:
        return None


@dataclass
class Labels:
    """Tags gathered in order, deduplicated, each cut to a label's length, at most `MAX_TAGS`."""

    items: list[str] = field(default_factory=list)

    def add(self, *values: object) -> None:
        for value in values:
            text = " ".join(str(value).split())[:MAX_LABEL_CHARS] if value is not None else ""
            if text and text not in self.items and len(self.items) < MAX_TAGS:
                self.items.append(text)


def load_json(path: Path) -> Any:
    """A JSON document, or the list of a JSON Lines file's objects; InvalidInputError naming the file.

    Refused with a reason: a zip archive (unzip it first), bytes that are not UTF-8, and nesting
    deeper than Python's parser recurses.
    """
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    except RecursionError:
        raise InvalidInputError(str(path), TOO_DEEP) from None
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise InvalidInputError(str(path), f"neither JSON nor JSON Lines ({exc.msg})") from None
    except RecursionError:
        raise InvalidInputError(str(path), TOO_DEEP) from None


TOO_DEEP = "is nested too deep to read as JSON (an export's records are a few levels deep)"
ZIP_MAGIC = b"PK\x03\x04"


def read_text(path: Path) -> str:
    """The file's text (UTF-8, a byte-order mark dropped); InvalidInputError naming the file otherwise."""
    raw = path.read_bytes()
    if raw.startswith(ZIP_MAGIC):
        raise InvalidInputError(
            str(path),
            "is a zip archive: unzip it and import the export inside (OpenMemory: memories.json)",
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            str(path), f"is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}): save it as UTF-8"
        ) from None


def records_in(data: Any, path: Path, *list_keys: str) -> list[dict[str, Any]]:
    """The records of a loaded document: a list, or the list an object holds under one of `list_keys`.

    InvalidInputError naming the file when there is none, or a record is not a JSON object.
    """
    if isinstance(data, dict):
        data = next((data[k] for k in list_keys if isinstance(data.get(k), list)), None)
        if data is None:
            raise InvalidInputError(
                str(path), f"expected a list of records under one of: {', '.join(list_keys)}"
            )
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InvalidInputError(str(path), "expected a list of JSON objects")
    return data


def read_json_records(path: Path, *list_keys: str) -> list[dict[str, Any]]:
    """`records_in(load_json(path), path, *list_keys)`."""
    return records_in(load_json(path), path, *list_keys)


def time_of(value: object, field_name: str) -> datetime | None:
    """A source timestamp (ISO-8601 text, or epoch seconds) as aware UTC; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise InvalidInputError(field_name, f"not a time: {value!r}") from None
    return parse_time(str(value), field_name)


def flat_metadata(
    source: Mapping[str, Any] | None, skip: frozenset[str] = frozenset()
) -> dict[str, MetadataValue]:
    """The source's metadata as flat key -> scalar: scalars kept, lists and objects as compact JSON.

    Keys in `skip` (mapped to a field of their own), nulls, and values longer than a metadata value
    may be are left out; at most `METADATA_BUDGET` keys, in the source's order.
    """
    flat: dict[str, MetadataValue] = {}
    for key, value in (source or {}).items():
        if key in skip or value is None or len(flat) >= METADATA_BUDGET:
            continue
        scalar = (
            value if isinstance(value, str | int | float | bool) else json.dumps(value, ensure_ascii=False)
        )
        if not isinstance(scalar, str) or len(scalar) <= MAX_METADATA_VALUE_CHARS:
            flat[str(key)[:MAX_LABEL_CHARS]] = scalar
    return flat


def scalar_items(record: Mapping[str, Any], *keys: str) -> dict[str, MetadataValue]:
    """`record[key]` for each key that holds a short scalar (what a record's own fields add to metadata)."""
    return flat_metadata({k: record[k] for k in keys if isinstance(record.get(k), str | int | float | bool)})


def iter_files(path: Path, suffix: str) -> Iterator[Path]:
    """`path` itself if it is a file, else the files under it ending in `suffix`, sorted."""
    if path.is_file():
        yield path
        return
    yield from sorted(p for p in path.rglob(f"*{suffix}") if p.is_file())

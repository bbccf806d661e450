"""Every free-text field a memory stores, named as an error names it: what `secrets` screens.

Content is not the only text a memory carries into agents' contexts, exports and archives: its
tags, entities, metadata (keys and string values), session id, speaker(s) and cues are stored,
indexed and shown too. `texts_of` lists each as `(field, text)`, content first, so a credential
anywhere is refused by the field that holds it (`metadata.note`, `tags[1]`, `cues[0]`).
Identifiers the service checks itself (memory and agent ids, idempotency keys) are not free text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from rearview.models import Cue

SCREENED_FIELDS = (
    "content", "session_id", "speaker", "tags", "entities", "metadata", "source_speakers", "cues",
)  # fmt: skip
"""The stored free-text fields of a write, an update's changes and a memory, in the order screened."""


def texts_of(fields: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """`(field, text)` for each free text among `fields` (a write's, an update's or a memory's).

    `prefix` goes before each field name (`memory.` for a restored record).
    """
    for name in SCREENED_FIELDS:
        value = fields.get(name)
        where = prefix + name
        if isinstance(value, str):
            yield where, value
        elif isinstance(value, Mapping):  # metadata: each key, and each string value by its key
            for key, item in value.items():
                yield where, str(key)
                if isinstance(item, str):
                    yield f"{where}.{key}", item
        elif isinstance(value, list | tuple):
            for i, item in enumerate(value):
                if isinstance(item, Cue):
                    yield f"{where}[{i}].text", item.text
                elif isinstance(item, str):
                    yield f"{where}[{i}]", item


def model_texts(model: object, prefix: str = "") -> Iterator[tuple[str, str]]:
    """`texts_of` a request or a memory, read by attribute."""
    return texts_of({name: getattr(model, name, None) for name in SCREENED_FIELDS}, prefix)

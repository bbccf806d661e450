"""The limits every caller is held to, as numbers and as the pydantic types that enforce them.

One table, one validation: the request models (`models.py`) and the MCP tools' parameters
(`api/tools/`) are built from the same annotated types, so a request constructed anywhere
(MCP, CLI, import, Lambda jobs, ingest) is valid by construction, and the tools' input schemas
advertise exactly the limits those types enforce. A value beyond a limit is an `InvalidInputError`
naming the field and the limit (`ValidRequest`), never a truncation.

Each limit is far below what every backend accepts (SQLite's expression depth of 1000 and 32,766
variables, OpenSearch's 1,024 boolean clauses, DynamoDB's 4 KB filter expressions and 100-item
batches), so no backend error reaches a caller, and small enough that no single request can hold
the index for long.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic.types import JsonValue
from pydantic_core import ErrorDetails

from rearview.errors import InvalidInputError
from rearview.text import disallowed_control_chars, format_chars, query_tokens, strip_format_chars

MAX_CONTENT_CHARS = 4000
"""`content` of a memory (one distilled statement)."""
MAX_QUERY_CHARS = 1000
"""`query` of a search."""
MAX_QUERY_TERMS = 32
"""Distinct search terms in a query (stopwords aside): each one is a posting list to merge."""
MAX_ID_CHARS = 64
"""A memory id (`memory_id`, `supersedes`, `ids` items)."""
MAX_SESSION_ID_CHARS = 128
MAX_AGENT_ID_CHARS = 128
MAX_IDEMPOTENCY_KEY_CHARS = 128
MAX_TAGS = 32
"""Tags (and entities) on a memory, and tags in a filter."""
MAX_LABEL_CHARS = 100
"""One tag, entity or metadata key (and an ingest speaker or message id)."""
MAX_CUES = 5
"""Recall cues one write may give: a few ways someone might later ask for the memory."""
MAX_CUE_CHARS = 200
"""One recall cue: a short question or phrase, not a second content."""
MAX_MEMORY_CUES = 10
"""Cues one memory keeps: a merge unites its writes' cues up to this many (the earliest kept)."""
MAX_ALTERNATIVES = 3
"""Other phrasings one search may give beside its query (each bounded like the query)."""
MAX_METADATA_KEYS = 32
MAX_METADATA_VALUE_CHARS = 500
MAX_METADATA_BYTES = 4096
"""All of a memory's metadata, as compact UTF-8 JSON."""
MAX_FILTER_IDS = 100
"""`ids` given to `memory_forget` in one call."""
MAX_TIMESTAMP_CHARS = 64
"""An ISO-8601 timestamp argument (`event_time`, `time_from`, `time_to`)."""
MAX_TOP_K = 50
MAX_TTL_DAYS = 36_500
MAX_FORGET_BATCH = 1000
"""Memories one filtered `memory_forget` call forgets (`more` says when there are others)."""
MAX_INGEST_MESSAGES = 200
"""Messages one `memory_ingest` call takes (a long chat is sent in several calls)."""
MAX_INGEST_CHARS = 100_000
"""All the `content` of one `memory_ingest` call together (and each message's is `MAX_CONTENT_CHARS`)."""
MIN_IMPORTANCE, MAX_IMPORTANCE = 1, 5
MIN_CONFIDENCE, MAX_CONFIDENCE = 0.0, 1.0
MAX_REPORTED_PROBLEMS = 5
"""Problems spelled out in one error (the rest are counted): 30 bad tags need not make 30 lines."""


# --------------------------------------------------------------------------------- problems


def control_chars_problem(text: str) -> str | None:
    """Why `text` cannot be stored (a control character other than tab, newline, return), or None."""
    bad = disallowed_control_chars(text)
    if not bad:
        return None
    shown = ", ".join(f"U+{c:04X}" for c in bad[:5])
    return f"contains control characters ({shown}); only tab, newline and carriage return are allowed"


def identifier_chars_problem(text: str) -> str | None:
    """Why `text` cannot be an agent, session or tag id (it hides format characters), or None.

    A bidi override or a zero-width character makes two ids look alike on screen, or one look
    like another (`text.format_chars`). ZWNJ and ZWJ stay allowed: some scripts need them.
    """
    bad = [c for c in format_chars(text) if c not in "\u200c\u200d"]
    if not bad:
        return None
    shown = ", ".join(f"U+{ord(c):04X}" for c in bad[:5])
    return f"contains invisible formatting characters ({shown}): bidi controls, zero-width and tag characters"


def query_terms_problem(query: str) -> str | None:
    """Why `query` has too many distinct terms (`MAX_QUERY_TERMS`), or None."""
    terms = len(query_tokens(query))
    return f"has {terms} distinct terms; the limit is {MAX_QUERY_TERMS}" if terms > MAX_QUERY_TERMS else None


def metadata_bytes_problem(metadata: Mapping[str, object]) -> str | None:
    """Why `metadata` is too large as compact UTF-8 JSON (`MAX_METADATA_BYTES`), or None."""
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode())
    return (
        f"is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}" if size > MAX_METADATA_BYTES else None
    )


def text_problem(text: str, max_chars: int, hint: str = "") -> str | None:
    """Why `text` is not 1..`max_chars` characters of plain text, or None."""
    if not text:
        return "must not be empty"
    if len(text) > max_chars:
        return f"is {len(text)} characters; the limit is {max_chars}{hint}"
    return control_chars_problem(text)


# ----------------------------------------------------------------------------- the types


def _refusing(problem: Callable[[Any], str | None]) -> AfterValidator:
    """A pydantic validator that fails with `problem(value)` when that is not None."""

    def check(value: Any) -> Any:
        reason = problem(value)
        if reason is not None:
            raise ValueError(reason)
        return value

    return AfterValidator(check)


def _strip(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _plain_text(
    max_chars: int, *, strip: bool = False, hint: str = "", blank: bool = False, identifier: bool = False
) -> AfterValidator:
    """Refuses a string that is not 1..`max_chars` characters with no control character but tab, LF, CR.

    `strip`: surrounding whitespace is removed first; `blank`: an empty value (after that) passes;
    `identifier`: invisible format characters are refused too (`identifier_chars_problem`).
    """

    def check(value: str) -> str:
        text = value.strip() if strip else value
        reason = None if blank and not text else text_problem(text, max_chars, hint)
        if reason is None and identifier and text:
            reason = identifier_chars_problem(text)
        if reason is not None:
            raise ValueError(reason)
        return text

    return AfterValidator(check)


def _advertised(max_chars: int, min_chars: int = 1) -> Any:
    """The bounds in the input schema (`minLength`/`maxLength`); `_plain_text` enforces them.

    Identifiers (ids, agent and session names, keys) advertise no `minLength`: no model sends an
    empty id, a server that gets one refuses it by name, and ten tools repeat them in every
    session's tools/list (issue 44 spent those characters on cues and alternatives).
    """
    schema: dict[str, JsonValue] = {"maxLength": max_chars}
    if min_chars:  # 0 is JSON Schema's default: saying it costs every session's tools/list
        schema["minLength"] = min_chars
    return Field(json_schema_extra=schema)


Visible = BeforeValidator(lambda v: strip_format_chars(v) if isinstance(v, str) else v)
"""Invisible format characters dropped before any limit is checked (`text.strip_format_chars`).

For text a memory stores (content, a speaker's name): it reads to a model as it shows to a person."""
ContentText = Annotated[
    str,
    Visible,
    _plain_text(MAX_CONTENT_CHARS, strip=True, hint=" (store one distilled statement)"),
    _advertised(MAX_CONTENT_CHARS),
]
"""A memory's content: stripped, 1..`MAX_CONTENT_CHARS` characters of visible plain text."""
SessionIdText = Annotated[
    str, _plain_text(MAX_SESSION_ID_CHARS, identifier=True), _advertised(MAX_SESSION_ID_CHARS, 0)
]
AgentIdText = Annotated[
    str, _plain_text(MAX_AGENT_ID_CHARS, identifier=True), _advertised(MAX_AGENT_ID_CHARS, 0)
]
IdempotencyKeyText = Annotated[
    str, _plain_text(MAX_IDEMPOTENCY_KEY_CHARS), _advertised(MAX_IDEMPOTENCY_KEY_CHARS, 0)
]
LabelText = Annotated[str, _plain_text(MAX_LABEL_CHARS), _advertised(MAX_LABEL_CHARS)]
"""One label of 1..`MAX_LABEL_CHARS` characters (a filter tag, an ingest speaker, a message id)."""
Label = Annotated[
    str,
    _plain_text(MAX_LABEL_CHARS, strip=True, blank=True, identifier=True),
    _advertised(MAX_LABEL_CHARS, 0),
]
"""One tag or entity on a memory: stripped; a blank one is dropped by `Labels`."""
NameText = Annotated[
    str, _plain_text(MAX_LABEL_CHARS, strip=True, blank=True), _advertised(MAX_LABEL_CHARS, 0)
]
"""A name as a message gives it (an ingest speaker, role or message id): stripped, may be blank.

Not an identifier: a disguised name (`assistant\u200b`) is read for who it stands for by the
ingest rules, not refused."""
SpeakerText = Annotated[str, Visible, _plain_text(MAX_LABEL_CHARS, strip=True), _advertised(MAX_LABEL_CHARS)]
"""Who said an ingested message or fact (set by the service): a visible name of 1..`MAX_LABEL_CHARS`."""
QueryText = Annotated[
    str,
    _plain_text(MAX_QUERY_CHARS, strip=True),
    _refusing(query_terms_problem),
    _advertised(MAX_QUERY_CHARS),
]
"""A search query: stripped, 1..`MAX_QUERY_CHARS` characters, at most `MAX_QUERY_TERMS` terms."""
CueText = Annotated[str, Visible, _plain_text(MAX_CUE_CHARS, strip=True), _advertised(MAX_CUE_CHARS)]
"""One recall cue: stripped, 1..`MAX_CUE_CHARS` characters of visible plain text."""
TimestampText = Annotated[str, Field(max_length=MAX_TIMESTAMP_CHARS)]
MetadataKey = LabelText


def _memory_id_problem(value: str) -> str | None:
    return None if 0 < len(value) <= MAX_ID_CHARS else f"must be a memory id (1..{MAX_ID_CHARS} characters)"


MemoryId = Annotated[
    str,
    _refusing(_memory_id_problem),
    _advertised(MAX_ID_CHARS, 0),
]


def _advertised_items(max_items: int, keyword: str = "maxItems") -> Any:
    schema: dict[str, JsonValue] = {keyword: max_items}
    return Field(json_schema_extra=schema)


def _distinct(values: list[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def _distinct_labels(values: list[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def _count_problem(limit: int) -> Callable[[Any], str | None]:
    def problem(values: Any) -> str | None:
        return f"has {len(values)} items; the limit is {limit}" if len(values) > limit else None

    return problem


MemoryIds = Annotated[
    list[MemoryId],
    AfterValidator(_distinct),
    _refusing(_count_problem(MAX_FILTER_IDS)),
    _advertised_items(MAX_FILTER_IDS),
]
"""Distinct memory ids, at most `MAX_FILTER_IDS`."""
Labels = Annotated[
    list[Label],
    AfterValidator(_distinct_labels),
    _refusing(_count_problem(MAX_TAGS)),
    _advertised_items(MAX_TAGS),
]
"""Tags or entities of a memory: stripped, blank ones dropped, de-duplicated in order, bounded."""


def _repeat_problem(values: Any) -> str | None:
    """Why a list of phrases repeats one (compared casefolded, spaces collapsed), or None."""
    seen: set[str] = set()
    for value in values:
        key = " ".join(str(value).casefold().split())
        if key in seen:
            return f"repeats {value!r}; give each phrasing once"
        seen.add(key)
    return None


def _empty_list_problem(values: Any) -> str | None:
    return "must not be an empty list (leave it out instead)" if len(values) == 0 else None


Cues = Annotated[
    list[CueText],
    _refusing(_count_problem(MAX_CUES)),
    _refusing(_repeat_problem),
    _advertised_items(MAX_CUES),
]
"""A write's recall cues: at most `MAX_CUES`, each a `CueText`, none repeated (an empty list: none)."""
Alternatives = Annotated[
    list[QueryText],
    _refusing(_empty_list_problem),
    _refusing(_count_problem(MAX_ALTERNATIVES)),
    _refusing(_repeat_problem),
    _advertised_items(MAX_ALTERNATIVES),
]
"""A search's other phrasings: 1..`MAX_ALTERNATIVES`, each a `QueryText`, none repeated."""
FilterTags = Annotated[
    tuple[LabelText, ...],
    _refusing(_count_problem(MAX_TAGS)),
    _advertised_items(MAX_TAGS),
]
"""Tags a filter requires (all of them), at most `MAX_TAGS`."""


def _one_metadata_problem(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """One message for a metadata value that fits no member of the union (pydantic gives one per member)."""
    try:
        return handler(value)
    except ValidationError:
        if not isinstance(value, str):
            raise ValueError("must be a string, number or boolean") from None
        if len(value) > MAX_METADATA_VALUE_CHARS:
            raise ValueError(f"is {len(value)} characters; the limit is {MAX_METADATA_VALUE_CHARS}") from None
        raise ValueError(control_chars_problem(value) or "is not a valid string") from None


MetadataScalar = Annotated[
    Annotated[str, Field(max_length=MAX_METADATA_VALUE_CHARS), _refusing(control_chars_problem)]
    | int
    | float
    | bool,
    WrapValidator(_one_metadata_problem),
]


def _metadata_keys_problem(metadata: Mapping[str, object]) -> str | None:
    return (
        f"has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}"
        if len(metadata) > MAX_METADATA_KEYS
        else None
    )


FlatMetadata = Annotated[
    dict[MetadataKey, MetadataScalar],
    _refusing(_metadata_keys_problem),
    _refusing(metadata_bytes_problem),
    _advertised_items(MAX_METADATA_KEYS, "maxProperties"),
]
"""Flat key -> scalar, bounded in keys, key and value length, and total size."""
Importance = Annotated[int, Field(ge=MIN_IMPORTANCE, le=MAX_IMPORTANCE)]
Confidence = Annotated[float, Field(ge=MIN_CONFIDENCE, le=MAX_CONFIDENCE)]
TtlDays = Annotated[float, Field(gt=0, le=MAX_TTL_DAYS)]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K)]


# ---------------------------------------------------------------------------- the error


def field_name(loc: tuple[int | str, ...]) -> str:
    """`("messages", 3, "content")` -> `messages[3].content`; `()` -> `arguments`."""
    name = ""
    for part in loc:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "arguments"


def problem_of(detail: ErrorDetails) -> str:
    """Pydantic's message for one problem, as a problem of the field (it states the limit, not the value)."""
    return detail["msg"].removeprefix("Value error, ")


def one_error(errors: list[InvalidInputError], total: int) -> InvalidInputError:
    """The first of `errors` (of `total` problems found), with the others spelled out after it."""
    first = errors[0]
    if len(errors) == 1 and total == 1:
        return first
    rest = "; ".join(str(e) for e in errors[1:])
    more = f"; and {total - len(errors)} more" if total > len(errors) else ""
    return InvalidInputError(first.field, f"{first.problem}; also {rest}{more}", first.allowed)


def invalid_input(exc: ValidationError, field: str | None = None) -> InvalidInputError:
    """One `InvalidInputError` for every problem pydantic found (the first names the field).

    `field` names the value that was validated when it is not a model (`checked`).
    """
    details = exc.errors(include_url=False, include_input=False)
    prefix: tuple[int | str, ...] = (field,) if field else ()
    errors = [
        InvalidInputError(field_name(prefix + tuple(d["loc"])), problem_of(d))
        for d in details[:MAX_REPORTED_PROBLEMS]
    ]
    return one_error(errors, len(details))


T = TypeVar("T")
_ADAPTERS: dict[int, TypeAdapter[Any]] = {}


def checked(kind: Any, value: T, field: str) -> T:
    """`value` validated as the limit type `kind` (e.g. `AgentIdText`), else `InvalidInputError`.

    For the service's operations that take a plain value rather than a request model.
    """
    adapter = _ADAPTERS.get(id(kind))
    if adapter is None:
        adapter = _ADAPTERS.setdefault(id(kind), TypeAdapter(kind))
    try:
        return adapter.validate_python(value)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise invalid_input(exc, field) from None


class ValidRequest(BaseModel):
    """A model that is valid by construction: a value beyond a limit is an `InvalidInputError`.

    Constructing one (`Model(...)`, `model_validate`) raises `InvalidInputError` naming the field
    and the limit instead of pydantic's `ValidationError`, so every caller gets the service's
    error. `model_copy(update=...)` does not validate: build a new request instead.
    """

    model_config = ConfigDict(defer_build=True)

    @model_validator(mode="wrap")
    @classmethod
    def _refuse_as_invalid_input(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            raise invalid_input(exc) from None

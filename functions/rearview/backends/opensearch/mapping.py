"""What an index version holds: its settings and strict mapping (`index_body`), and a memory's document."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from rearview.text import STOPWORDS
from rearview.text.fts_terms import text_terms

if TYPE_CHECKING:
    from rearview.backends.opensearch.config import OpenSearchConfig
    from rearview.models import Memory
    from rearview.ports import Vector

__all__ = [
    "ADDED_FIELDS",
    "CONTEXT_FIELD",
    "CUES_FIELD",
    "CUE_VECTORS_FIELD",
    "INDEX_ANALYZER",
    "KEYWORD_FIELDS",
    "TERMS_ANALYZER",
    "TERM_FIELDS",
    "QUERY_ANALYZER",
    "VERSION_FIELDS",
    "Json",
    "added_fields",
    "cue_entries",
    "cue_text",
    "document_source",
    "epoch_us",
    "index_body",
    "keyword_terms",
]

Json = dict[str, Any]

INDEX_ANALYZER: Final = "rearview_text"
"""standard tokenizer + cjk_width + lowercase + asciifolding + cjk_bigram + porter_stem: stemmed
words without diacritics, and overlapping CJK bigrams (the terms of SQLite's FTS5 index)."""
QUERY_ANALYZER: Final = "rearview_query"
"""`INDEX_ANALYZER` less the English stopwords of `rearview.text.STOPWORDS`: the fields' search
analyzer. `keyword_queries.keyword_body` drops stopwords itself (as SQLite does) and searches with
`INDEX_ANALYZER`, which every index version has."""

KEYWORD_FIELDS: Final = (
    "memory_id", "tenant_id", "agent_id", "visibility", "session_id", "type", "tags", "status", "scope_key",
)  # fmt: skip
"""The exact-match fields of the mapping: ids and everything a `MemoryFilter` can test."""

VERSION_FIELDS: Final = {"memory_version": {"type": "long"}, "content_hash": {"type": "keyword"}}
"""What a document knows of its memory's version: conditional writes and `versions` read them.

Added to an index created before they existed by `ensure_schema` (mappings only grow)."""

CONTEXT_FIELD: Final = "context"
"""The text field of `IndexDocument.context`: analyzed like `content`, searched at `CONTEXT_WEIGHT`."""
CUES_FIELD: Final = "cues"
"""The text field of a memory's recall cues (`IndexDocument.cue_text`, a cue a line): analyzed like
`content`; the keyword channel matches their terms (`TERM_FIELDS["cues"]`) at `CUE_WEIGHT`."""
CUE_VECTORS_FIELD: Final = "cue_vectors"
"""The `nested` field of a memory's cue vectors: one object per cue, `{"cue": i, "vector": [...]}`
(row i of `IndexDocument.cue_vectors`, for `Memory.cues[i]`; no `vector` where the row is zero), and
one per part of its content, `{"cue": -1 - j, ...}` (row j of `IndexDocument.part_vectors`).

A nested k-NN query scores a document by its best cue; `vector_queries.vector_body` takes the best of
that and the content's `vector`, and reads which cue carried it from the nested query's inner hit."""

_TEXT: Final = {"type": "text", "analyzer": INDEX_ANALYZER, "search_analyzer": QUERY_ANALYZER}

TERMS_ANALYZER: Final = "whitespace"
"""The analyzer of `TERM_FIELDS` (built in, so it can be mapped onto an existing index): their text is
already SQLite FTS5's terms, space-separated."""
_TERMS: Final = {"type": "text", "analyzer": TERMS_ANALYZER, "similarity": "boolean", "norms": False}
"""`boolean` similarity: a match scores its clause's boost, never the engine's corpus-wide (per shard,
every tenant) statistics; the keyword channel boosts each phrase by the tenant's own IDF. A field's
similarity cannot change on an existing index: one created with BM25 term fields keeps them (and a
shortlist the engine's statistics order) until `rearview reindex`."""

TERM_FIELDS: Final = {"body": "kw_body", "context": "kw_context", "cues": "kw_cues", "length": "kw_length"}
"""The document as the embedded index holds it, for BM25 as FTS5 scores it (`rearview.text.bm25`): the FTS5
terms of the content, of the context and of the recall cues (`keyword_terms`), and their total count.
The keyword channel matches on them, reads them back from candidates and sums the lengths over the
tenant's documents."""

ADDED_FIELDS: Final = {
    **VERSION_FIELDS,
    CONTEXT_FIELD: _TEXT,
    CUES_FIELD: _TEXT,
    TERM_FIELDS["body"]: _TERMS,
    TERM_FIELDS["context"]: _TERMS,
    TERM_FIELDS["cues"]: _TERMS,
    TERM_FIELDS["length"]: {"type": "integer"},
    "created_at_us": {"type": "long"},
    "updated_at_us": {"type": "long"},
}
"""The fields added since the first mapping that do not depend on the configuration (`added_fields`
adds the cue vectors'): `ensure_schema` puts them on an index created before them."""

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)


def index_body(config: OpenSearchConfig) -> Json:
    """Settings and the explicit (`dynamic: strict`) mapping of one index version.

    Text: a custom analyzer rather than `smartcn` (a plugin that is not on every domain) or the
    built-in `cjk` analyzer (which drops English stopwords at index time and cannot be tuned):
    CJK runs become overlapping bigrams exactly like `rearview.text.tokens`, words are folded and
    Porter-stemmed as SQLite FTS5's `porter unicode61 remove_diacritics 2` tokenizer does, so the
    embedded index and OpenSearch agree on what matches; stopwords are dropped only from queries.
    An index keeps the analyzers it was created with (they cannot change on an open index, and
    Serverless cannot close one): an index created before stemming still works, unstemmed, until
    `rearview reindex` builds a new version with this body.
    `event_time_us` (epoch microseconds) carries the time filter, because `date` keeps only
    milliseconds and the filter bounds are inclusive at microsecond precision.
    """
    keyword = {"type": "keyword"}
    index_settings: Json = {"knn": True}
    if config.mode != "serverless":  # collections manage shards and replicas themselves
        if config.shards is not None:
            index_settings["number_of_shards"] = config.shards
        if config.replicas is not None:
            index_settings["number_of_replicas"] = config.replicas
    words = ["cjk_width", "lowercase", "asciifolding", "cjk_bigram"]
    return {
        "settings": {
            "index": index_settings,
            "analysis": {
                "filter": {"rearview_stop": {"type": "stop", "stopwords": sorted(STOPWORDS)}},
                "analyzer": {
                    INDEX_ANALYZER: {
                        "type": "custom",
                        "tokenizer": "standard",
                        "filter": [*words, "porter_stem"],
                    },
                    QUERY_ANALYZER: {
                        "type": "custom",
                        "tokenizer": "standard",
                        "filter": [*words, "rearview_stop", "porter_stem"],
                    },
                },
            },
        },
        "mappings": {
            **({"_meta": {"embedding_model": config.embedding_model}} if config.embedding_model else {}),
            "dynamic": "strict",
            "properties": {
                **{name: keyword for name in KEYWORD_FIELDS},
                **VERSION_FIELDS,
                **added_fields(config),
                "content": _TEXT,
                "event_time": {"type": "date"},
                "event_time_us": {"type": "long"},
                "updated_at": {"type": "date"},
                "vector": _knn_vector(config),
            },
        },
    }


def added_fields(config: OpenSearchConfig) -> Json:
    """Every field added since the first mapping: `ADDED_FIELDS` and the recall cues' vectors.

    `ensure_schema` puts the ones it lacks on an index created before them (mappings only grow, and
    a `nested` field of `knn_vector`s can be added to a k-NN index like any other field).
    """
    return {
        **ADDED_FIELDS,
        CUE_VECTORS_FIELD: {
            "type": "nested",
            "properties": {"cue": {"type": "integer"}, "vector": _knn_vector(config)},
        },
    }


def _knn_vector(config: OpenSearchConfig) -> Json:
    """A `knn_vector` field of the index's vectors: HNSW, cosine similarity."""
    return {
        "type": "knn_vector",
        "dimension": config.dimension,
        "method": {
            "name": "hnsw",
            "engine": config.engine,
            "space_type": "cosinesimil",
            "parameters": {"m": config.m, "ef_construction": config.ef_construction},
        },
    }


def document_source(
    memory: Memory,
    vector: Vector | None,
    context: str | None,
    *,
    cue_vectors: Vector | None = None,
    part_vectors: Vector | None = None,
) -> Json:
    """The indexed document of a memory (`vector` None: the fields a vector-less update sets).

    `context` None: no context in a full document, the indexed one kept by a vector-less update.
    A full document holds the memory's recall cues (text and vectors) when `cue_vectors` are given,
    and none otherwise (`IndexDocument.cue_vectors`), and its content's parts' vectors (`part_vectors`,
    in the same nested field: `cue_entries`); a vector-less update's are `ids._kept`'s.
    """
    source: Json = {
        "memory_id": memory.id,
        "tenant_id": memory.tenant_id,
        "agent_id": memory.agent_id,
        "visibility": memory.visibility.value,
        "session_id": memory.session_id,
        "type": memory.type.value,
        "tags": list(memory.tags),
        "status": memory.status.value,
        "scope_key": memory.scope_key,
        "event_time": _utc(memory.event_time).isoformat(),
        "event_time_us": epoch_us(memory.event_time),
        "updated_at": _utc(memory.updated_at).isoformat(),
        "created_at_us": epoch_us(memory.created_at),  # `as_of` (`queries.as_of_clauses`)
        "updated_at_us": epoch_us(memory.updated_at),
        "memory_version": memory.version,
        "content_hash": memory.content_hash,
    }
    if context is not None or vector is not None:
        source[CONTEXT_FIELD] = context or ""
    if vector is not None:
        cues = cue_text(memory) if cue_vectors is not None else ""
        source["content"] = memory.content
        source[CUES_FIELD] = cues
        source[CUE_VECTORS_FIELD] = cue_entries(cue_vectors) + part_entries(part_vectors)
        source.update(keyword_terms(memory.content, context or "", cues))
        if vector.any():  # cosinesimil rejects a zero vector; such a memory is found by keyword only
            source["vector"] = vector.tolist()
    return source


def cue_text(memory: Memory) -> str:
    """The memory's recall cues as `CUES_FIELD` holds them (`IndexDocument.cue_text`): a cue a line."""
    return "\n".join(c.text for c in memory.cues)


def cue_entries(cue_vectors: Vector | None) -> list[Json]:
    """`CUE_VECTORS_FIELD` of a document: row i as cue i (without a vector where the row is zero)."""
    if cue_vectors is None:
        return []
    return [
        {"cue": i, **({"vector": row.tolist()} if row.any() else {})} for i, row in enumerate(cue_vectors)
    ]


def part_entries(part_vectors: Vector | None) -> list[Json]:
    """The content's parts in `CUE_VECTORS_FIELD`: part j as `cue` -1 - j (a negative `cue` is a part).

    One nested field, so the one nested k-NN query scores a document by the best of its cues and parts
    (`vector_queries.vector_body`), and no index needs a new mapping for them.
    """
    if part_vectors is None:
        return []
    return [{"cue": -1 - j, "vector": row.tolist()} for j, row in enumerate(part_vectors) if row.any()]


def keyword_terms(content: str, context: str, cues: str = "") -> Json:
    """`TERM_FIELDS` of a document's content, context and cues: what FTS5 indexes of each, and the count."""
    body, ctx, cue = text_terms(content), text_terms(context), text_terms(cues)
    return {
        TERM_FIELDS["body"]: " ".join(body),
        TERM_FIELDS["context"]: " ".join(ctx),
        TERM_FIELDS["cues"]: " ".join(cue),
        TERM_FIELDS["length"]: len(body) + len(ctx) + len(cue),
    }


def epoch_us(when: datetime) -> int:
    """Exact microseconds since the epoch (negative before 1970); naive datetimes are taken as UTC."""
    return (_utc(when) - _EPOCH) // _MICROSECOND


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def missing_fields(mappings: list[Mapping[str, Any]], added: Json) -> Json:
    """`added` fields that some index's `mappings` lack.

    A field it has stays as it was mapped: its similarity, for one, cannot change on an existing index.
    """
    missing: Json = {}
    for mapping in mappings:
        props = mapping.get("properties")
        props = props if isinstance(props, Mapping) else {}
        missing.update({name: field for name, field in added.items() if name not in props})
    return missing

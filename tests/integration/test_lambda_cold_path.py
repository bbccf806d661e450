"""What a cold MCP Lambda loads before it answers `initialize` and `tools/list`: not numpy, no capability.

A fresh process imports `handlers.mcp`, builds the runtime (what an on-demand Lambda init does) and
serves `initialize` and `tools/list`, the first requests of every session. None of that computes with
a vector or runs a capability, so numpy (about 130 ms of CPU, a tenth of the init measured by
`benchmarks/speed/cold_start.py`) and the write, search and ingest paths (their regexes, models and
tables) must load on the first tool call that needs them. Checked by the modules loaded, not by
timing: in the benchmark's configuration (in-memory backends, the hashing embedder) and in the
deployed one (DynamoDB, OpenSearch, Bedrock; AWS unreachable, which also proves that none of it makes
an AWS call). The models' validators are built on first use too, and so is each tool's argument
model (tools/list answers from the shipped schemas). Where init is pre-paid (provisioned
concurrency, SnapStart) it loads them all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.events import EVENTS_DIR

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import contextlib, io, json, os, sys
from tests.events import load_event

class Context:
    function_name = "rearview-mcp"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:rearview-mcp:live"
    aws_request_id = "cold-path"
    def get_remaining_time_in_millis(self):
        return 29_000

from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase

def arg_models():  # the SDK names a function's argument model `<name>Arguments`
    return sorted(model.__name__.removesuffix("Arguments") for model in ArgModelBase.__subclasses__())

from handlers import mcp
mcp.runtime()
import rearview.models
models = [v for v in vars(rearview.models).values() if isinstance(v, type) and hasattr(v, "model_fields")]
loaded = {"init": sorted(sys.modules), "built": sorted(m.__name__ for m in models if m.__pydantic_complete__)}
loaded["init_arg_models"] = arg_models()
with contextlib.redirect_stdout(io.StringIO()):  # EMF blobs
    for name in ("mcp-2025-11-25/initialize", "mcp-2025-11-25/tools-list", "mcp-2026-07-28/tools-list"):
        result = mcp.handler(load_event(name), Context())
        assert result["statusCode"] == 200, result
        assert "error" not in json.loads(result["body"]), result["body"]
loaded["first_requests"] = sorted(sys.modules)
loaded["first_requests_arg_models"] = arg_models()
sys.stdout.write(json.dumps(loaded))
sys.stdout.flush()
computed = None
if os.environ["REARVIEW_EMBEDDER"] == "hashing":  # local: the first embedding loads numpy, computes
    vector = mcp.runtime().service.embedder.embed_query("the cold path computes here")
    computed = "numpy" in sys.modules and float(vector @ vector) > 0.99
sys.stdout.write("\\n" + json.dumps(computed))
"""

DEPLOYED = {
    "REARVIEW_STORE": "dynamodb",
    "REARVIEW_INDEX": "opensearch",
    "REARVIEW_ARCHIVE": "s3",
    "REARVIEW_EMBEDDER": "bedrock",
    "REARVIEW_TABLE_NAME": "rearview-cold-path",
    "REARVIEW_ARCHIVE_BUCKET": "rearview-cold-path",
    "REARVIEW_OPENSEARCH_ENDPOINT": "https://127.0.0.1:9",
    "REARVIEW_ENSURE_INDEX": "false",  # the template's default is true: one round trip, not a module
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
}
TOOLS = sorted(
    json.loads((ROOT / "functions/rearview/api/tools/schemas.json").read_text(encoding="utf-8"))["tools"]
)
HEAVY = (
    "numpy",
    "rearview.service.write.writer",
    "rearview.service.write.summarizing",
    "rearview.service.search.searcher",
    "rearview.service.ingest.ingester",
    "rearview.service.ingest.extraction",
    "rearview.service.changes",
)


def _cold_process(overrides: dict[str, str]) -> tuple[dict[str, list[str]], bool | None]:
    env_file = json.loads((EVENTS_DIR / "env.json").read_text(encoding="utf-8"))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("REARVIEW_", "AWS_"))},
        **env_file["Parameters"],
        **env_file["McpFunction"],
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "functions"), str(ROOT)]),
        **overrides,
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    loaded, computed = out.stdout.strip().splitlines()
    return json.loads(loaded), json.loads(computed)


@pytest.mark.parametrize("overrides", [{}, DEPLOYED], ids=["benchmark", "deployed"])
def test_init_and_the_first_requests_load_no_numpy_and_no_capability(overrides: dict[str, str]) -> None:
    loaded, computed = _cold_process(overrides)
    for phase in ("init", "first_requests"):
        assert [m for m in HEAVY if m in loaded[phase]] == [], phase
    assert "rearview.api.app" in loaded["init"]  # the runtime was built, not deferred
    for phase in ("init", "first_requests"):  # tools/list is the shipped schemas' text
        assert [t for t in TOOLS if t in loaded[f"{phase}_arg_models"]] == [], phase
    assert loaded["built"] == []  # each model's validator is built on its first use (`defer_build`)
    assert computed is (True if not overrides else None)


def test_a_pre_paid_init_loads_everything_the_first_calls_need() -> None:
    loaded, computed = _cold_process({"AWS_LAMBDA_INITIALIZATION_TYPE": "provisioned-concurrency"})
    assert [m for m in HEAVY if m not in loaded["init"]] == []
    assert [t for t in TOOLS if t not in loaded["init_arg_models"]] == []
    assert computed is True

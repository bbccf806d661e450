#!/usr/bin/env python
"""Cold start of the *built* MCP function under the Lambda runtime emulator, and the built layer's size.

What `sam build` produced (this machine's architecture, `tests/deployed/tooling.py`), run as the
deployed tier runs it: the function's directory + the layer + the runtime's packages, CPython
3.13, the template's environment (apikey mode, keys in SSM on a moto server, the real OpenSearch
test node, hashing embedder). `--runs` fresh emulators (default 5), each timing:

- init: the emulator's `INIT REPORT` (imports + the runtime built in the init phase, including
  the key map read from SSM): what a cold start costs before the first request;
- first request: the handler's duration of the first invocation (`initialize`, 2025 era), and
  its wall time end to end (emulator + init + handler);
- then `--warm` (default 20) `tools/list` invocations on the same instance: p50 handler time.

Prints the medians, and the built layer's size: unzipped (files, of which bytecode) and zipped
(deflate, what Lambda's 250 MB unzipped / 50 MB zipped-upload limits apply to). Numbers on a
shared 2-core machine are noisy: compare runs made together, not across days.

    .venv/bin/python benchmarks/speed/deployed_cold_start.py [--runs 5] [--warm 20] [--json PATH]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "functions")]

import boto3  # noqa: E402

from infra.local_aws import moto_server  # noqa: E402
from tests.deployed import stack as stack_module  # noqa: E402
from tests.deployed.conftest import NAMES, TENANT_A_KEY, _provision, parameters  # noqa: E402
from tests.deployed.rie import BuiltFunction, free_port  # noqa: E402
from tests.deployed.tooling import build, ensure_tools  # noqa: E402
from tests.engines.opensearch_node import OpenSearchNode, external_url  # noqa: E402

MB = 1_000_000


def layer_size(layer: Path) -> dict[str, float]:
    """Unzipped MB (all files, bytecode alone) and deflate-zipped MB of the built layer."""
    files = [p for p in layer.rglob("*") if p.is_file()]
    unzipped = sum(p.stat().st_size for p in files)
    bytecode = sum(p.stat().st_size for p in files if p.suffix == ".pyc")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in files:
            archive.write(path, path.relative_to(layer))
    return {
        "unzipped_mb": unzipped / MB,
        "bytecode_mb": bytecode / MB,
        "zipped_mb": len(buffer.getvalue()) / MB,
    }


def http_event(body: dict[str, Any], protocol: str = "2025-11-25") -> dict[str, Any]:
    text = json.dumps(body)
    return {
        "version": "2.0",
        "routeKey": "POST /mcp",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": {
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {TENANT_A_KEY}",
            "content-type": "application/json",
            "content-length": str(len(text)),
            "host": "bench.execute-api.us-east-1.amazonaws.com",
            "mcp-protocol-version": protocol,
        },
        "requestContext": {
            "accountId": stack_module.ACCOUNT,
            "apiId": "bench",
            "domainName": "bench.execute-api.us-east-1.amazonaws.com",
            "http": {
                "method": "POST",
                "path": "/mcp",
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "bench",
            },
            "requestId": "bench",
            "routeKey": "POST /mcp",
            "stage": "$default",
            "timeEpoch": int(time.time() * 1000),
        },
        "body": text,
        "isBase64Encoded": False,
    }


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


@contextmanager
def opensearch() -> Iterator[str]:
    url = external_url()
    if url is not None:
        yield url
        return
    node = OpenSearchNode.start()
    try:
        yield node.url
    finally:
        node.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[1])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    tools = ensure_tools()
    built = build(tools)
    size = layer_size(built.layer_dir)
    rows: list[dict[str, float]] = []
    with ExitStack() as stack_of, tempfile.TemporaryDirectory(prefix="rearview-bench-") as scratch:
        url = stack_of.enter_context(opensearch())
        endpoint = stack_of.enter_context(moto_server(free_port()))
        stack = stack_module.Stack(stack_module.load(ROOT / "template.yaml"), parameters(url), NAMES)
        session = boto3.session.Session(
            region_name=stack_module.REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        _provision(session, endpoint, stack)
        spec = stack.function("McpFunction")
        for run in range(args.runs):
            function = BuiltFunction.start(
                spec,
                code_dir=built.code_dir("McpFunction"),
                layer_dir=built.layer_dir,
                runtime_dir=tools.runtime_dir,
                python=tools.python313,
                emulator=tools.emulator,
                aws_endpoint=endpoint,
                log_path=Path(scratch) / f"mcp-{run}.log",
            )
            try:
                first = function.invoke(http_event(INITIALIZE))
                assert not first.error and first.payload["statusCode"] == 200, first.payload
                for _ in range(args.warm):
                    warm = function.invoke(http_event(TOOLS_LIST))
                    assert not warm.error and warm.payload["statusCode"] == 200, warm.payload
                (init_ms,) = function.init_ms()
                handler_ms = function.invoke_ms()
                rows.append(
                    {
                        "init_ms": init_ms,
                        "first_request_ms": handler_ms[0],
                        "first_request_wall_ms": first.wall_ms,
                        "warm_p50_ms": statistics.median(handler_ms[1:]) if args.warm else float("nan"),
                    }
                )
            finally:
                function.stop()
            print(
                f"run {run + 1}/{args.runs}: " + ", ".join(f"{k} {v:.0f}" for k, v in rows[-1].items()),
                flush=True,
            )

    medians = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    print(
        f"\nbuilt MCP function under the Lambda runtime emulator ({built.architecture}, CPython 3.13), "
        f"median of {args.runs} cold starts:"
    )
    print(f"  init (INIT REPORT)              {medians['init_ms']:8.0f} ms")
    print(
        f"  first request (initialize)      {medians['first_request_ms']:8.0f} ms handler, "
        f"{medians['first_request_wall_ms']:.0f} ms wall incl. init"
    )
    print(f"  warm tools/list p50             {medians['warm_p50_ms']:8.1f} ms ({args.warm} calls)")
    print(f"built layer {built.layer_dir.relative_to(ROOT)}:")
    print(
        f"  unzipped {size['unzipped_mb']:.1f} MB (bytecode {size['bytecode_mb']:.1f} MB), "
        f"zipped {size['zipped_mb']:.1f} MB"
    )
    if args.json:
        args.json.write_text(json.dumps({"runs": rows, "median": medians, "layer": size}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`make serve-aws-local`: `rearview serve` on the AWS code path (DynamoDB + S3 + OpenSearch), all local.

What it does, in order:
1. starts `moto_server` on 127.0.0.1 (`--moto-port`, default 5000), unless `--aws-endpoint` names
   a running one (a moto server or LocalStack);
2. starts the OpenSearch test node (`tests/engines/opensearch_node.py`, the jars `make
   opensearch-engine` fetches), unless `--opensearch-url` (or `REARVIEW_OPENSEARCH_URL`) names one;
3. creates the memory table (from template.yaml's `MemoryTable`: keys, GSIs, stream, TTL) and the
   archive bucket (from `ArchiveBucket`), skipping what already exists; `--no-create` skips this;
4. runs `rearview serve` with `REARVIEW_STORE=dynamodb`, `REARVIEW_ARCHIVE=s3`,
   `REARVIEW_INDEX=opensearch` (mode `local`, engine `lucene`), `AWS_ENDPOINT_URL` and fake
   credentials; arguments after `--` go to `rearview serve`. Ctrl-C stops the server, then the
   node and moto.

Where things live: memories and the lifecycle jobs' checkpoints in the DynamoDB table (checkpoints
are items of the same table, as in AWS), archived memories in the bucket under `archive/`, the
index in the node. A moto server keeps everything in memory: it is gone when the script exits
(use `--aws-endpoint` with LocalStack for data that outlives it). The test node's data is
temporary too.

    python -m infra.local_aws [--moto-port 5000] [--table T] [--bucket B] [-- --port 8080]

(from the repository root: it reuses the test helpers that read template.yaml).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import boto3

from infra.ports_free import taken_port
from tests.fixtures.aws import REGION, provision_bucket, provision_table

DEFAULT_TABLE = "rearview-memories"
DEFAULT_BUCKET = "rearview-archive-local"
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@contextmanager
def moto_server(port: int, timeout_s: float = 30) -> Iterator[str]:
    """A `moto_server` on 127.0.0.1:`port` for the block's duration; yields its endpoint URL."""
    process = subprocess.Popen(  # noqa: S603 - our own interpreter running moto
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(endpoint, process, timeout_s)
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=10)


def wait_until_up(endpoint: str, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Poll `endpoint` until it answers HTTP; RuntimeError if the process exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode} (is the port taken?)")
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()  # noqa: S310 - loopback URL
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    raise RuntimeError(f"moto_server did not answer on {endpoint} within {timeout_s:.0f} s")


def provision(endpoint: str, table: str, bucket: str) -> list[str]:
    """Create the table and the bucket at `endpoint` unless they exist; what was created."""
    session = boto3.session.Session(
        region_name=REGION,
        aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    dynamodb: Any = session.client("dynamodb", endpoint_url=endpoint)
    s3: Any = session.client("s3", endpoint_url=endpoint)
    created: list[str] = []
    if table not in dynamodb.list_tables()["TableNames"]:
        created.append(f"table {provision_table(dynamodb, table)}")
    if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        created.append(f"bucket {provision_bucket(s3, bucket)}")
    return created


def serve_env(endpoint: str, opensearch_url: str, table: str, bucket: str) -> dict[str, str]:
    """The environment of `rearview serve` on the local AWS endpoints (this process's env overlaid)."""
    return {
        **os.environ,
        **FAKE_CREDENTIALS,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": endpoint,
        "REARVIEW_STORE": "dynamodb",
        "REARVIEW_TABLE_NAME": table,
        "REARVIEW_ARCHIVE": "s3",
        "REARVIEW_ARCHIVE_BUCKET": bucket,
        "REARVIEW_INDEX": "opensearch",
        "REARVIEW_OPENSEARCH_ENDPOINT": opensearch_url,
        "REARVIEW_OPENSEARCH_MODE": "local",
        "REARVIEW_OPENSEARCH_ENGINE": "lucene",  # the test node has no faiss native libraries
    }


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """This script's options, and the arguments after `--` for `rearview serve`."""
    argv = list(argv)
    serve_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--moto-port", type=int, default=5000, help="port of the moto server to start")
    parser.add_argument("--aws-endpoint", help="use this running DynamoDB/S3 endpoint instead of moto")
    parser.add_argument("--opensearch-url", default=os.environ.get("REARVIEW_OPENSEARCH_URL"))
    parser.add_argument("--table", default=DEFAULT_TABLE)
    parser.add_argument("--bucket", default=DEFAULT_BUCKET)
    parser.add_argument("--no-create", action="store_true", help="do not create the table and bucket")
    return parser.parse_args(own), serve_args


def main(argv: Sequence[str] | None = None) -> int:
    """Start what is missing, create the table and bucket, run `rearview serve` until it exits."""
    args, serve_args = parse_args(sys.argv[1:] if argv is None else argv)
    rearview = shutil.which("rearview") or str(Path(sys.executable).with_name("rearview"))
    problem = taken_port(serve_args, None if args.aws_endpoint else args.moto_port)
    if problem is not None:  # before moto and the OpenSearch node start
        print(problem, file=sys.stderr)
        return 1
    with ExitStack() as stack:
        endpoint = args.aws_endpoint or stack.enter_context(moto_server(args.moto_port))
        opensearch_url = args.opensearch_url
        if not opensearch_url:
            from tests.engines.opensearch_node import OpenSearchNode

            print("starting the OpenSearch test node (about 20 s)...", flush=True)
            opensearch_url = stack.enter_context(OpenSearchNode.start()).url
        if not args.no_create:
            for created in provision(endpoint, args.table, args.bucket):
                print(f"created {created} at {endpoint}")
        print(
            f"DynamoDB + S3 at {endpoint} (table {args.table}: memories and job checkpoints; "
            f"bucket {args.bucket}: archive/), OpenSearch at {opensearch_url}",
            flush=True,
        )
        env = serve_env(endpoint, opensearch_url, args.table, args.bucket)
        try:
            return subprocess.call([rearview, "serve", *serve_args], env=env)  # noqa: S603 - our own CLI
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())

"""`infra/local_aws.py` (make serve-aws-local): its moto server and the table + bucket it creates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from infra import local_aws, ports_free
from tests.e2e.server import free_port
from tests.fixtures.aws import REGION, resource_properties


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with local_aws.moto_server(free_port()) as url:
        yield url


def clients(endpoint: str) -> tuple[Any, Any]:
    session = boto3.session.Session(
        region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    return session.client("dynamodb", endpoint_url=endpoint), session.client("s3", endpoint_url=endpoint)


def test_creates_the_table_and_the_bucket_once(endpoint: str) -> None:
    assert local_aws.provision(endpoint, "mem", "arch") == ["table mem", "bucket arch"]
    assert local_aws.provision(endpoint, "mem", "arch") == []  # a second run keeps what exists

    dynamodb, s3 = clients(endpoint)
    table = dynamodb.describe_table(TableName="mem")["Table"]
    template = resource_properties("MemoryTable")
    assert table["KeySchema"] == template["KeySchema"]
    assert {i["IndexName"] for i in table["GlobalSecondaryIndexes"]} == {
        i["IndexName"] for i in template["GlobalSecondaryIndexes"]
    }
    assert table["StreamSpecification"]["StreamEnabled"] is True
    ttl = dynamodb.describe_time_to_live(TableName="mem")["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED"
    encryption = s3.get_bucket_encryption(Bucket="arch")
    assert encryption["ServerSideEncryptionConfiguration"]["Rules"]


def test_serve_environment_points_every_backend_at_the_local_endpoints(endpoint: str) -> None:
    env = local_aws.serve_env(endpoint, "http://127.0.0.1:9200", "mem", "arch")
    assert env["AWS_ENDPOINT_URL"] == endpoint and env["AWS_ACCESS_KEY_ID"] == "testing"
    assert (env["REARVIEW_STORE"], env["REARVIEW_TABLE_NAME"]) == ("dynamodb", "mem")
    assert (env["REARVIEW_ARCHIVE"], env["REARVIEW_ARCHIVE_BUCKET"]) == ("s3", "arch")
    assert (env["REARVIEW_INDEX"], env["REARVIEW_OPENSEARCH_MODE"]) == ("opensearch", "local")
    assert env["REARVIEW_OPENSEARCH_ENGINE"] == "lucene"  # what the test node supports


def test_serve_arguments_follow_the_double_dash() -> None:
    args, serve = local_aws.parse_args(["--table", "t", "--", "--port", "9000"])
    assert (args.table, args.bucket, serve) == ("t", local_aws.DEFAULT_BUCKET, ["--port", "9000"])


@pytest.mark.parametrize("which", ["serve", "moto"])
def test_a_taken_port_is_one_line_before_moto_or_opensearch_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    import socket

    def nothing_starts(*_: object, **__: object) -> None:
        raise AssertionError("nothing may start once a port is known to be taken")

    monkeypatch.setattr(local_aws, "moto_server", nothing_starts)
    monkeypatch.setattr(local_aws.subprocess, "call", nothing_starts)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        other = free_port()
        serve_port, moto_port = (port, other) if which == "serve" else (other, port)
        argv = ["--moto-port", str(moto_port), "--", "--port", str(serve_port)]
        assert local_aws.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"local_aws: error: port {port} is in use (try ") and err.count("\n") == 1
    assert ("--moto-port" in err) is (which == "moto")


def test_the_serve_address_comes_from_the_arguments_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REARVIEW_PORT", "9001")
    assert ports_free.serve_address([]) == ("127.0.0.1", 9001)
    assert ports_free.serve_address(["--port", "9002", "--no-ui"]) == ("127.0.0.1", 9002)


def test_make_serve_aws_local_reports_a_taken_port_before_it_installs_anything(tmp_path: Path) -> None:
    """Issue 34.11: with 8080 busy it installed `.[dev]` for 161 s, then said the port was taken.

    A fresh virtual environment (`VENV`, `STAMP` in the temporary directory) is what an install would
    create first: it must not exist after the refusal.
    """
    import socket
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    venv = tmp_path / "venv"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            ["make", "--no-print-directory", "serve-aws-local", f"ARGS=--port {port}",
             f"PYTHON={sys.executable}", f"VENV={venv}", f"STAMP={venv}/.installed"],
            cwd=root, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert result.returncode != 0
    assert f"local_aws: error: port {port} is in use" in result.stderr
    assert not venv.exists() and "pip" not in result.stdout + result.stderr

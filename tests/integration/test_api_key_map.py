"""The Lambda's API key map in SSM Parameter Store and Secrets Manager (on moto).

`infra/put_api_key.py` writes the map the way `rearview.api.lambda_auth` reads it; these tests
prove the round trip, so the two cannot drift apart.
"""

from __future__ import annotations

import json

import boto3
import pytest

from infra import put_api_key
from rearview.api.lambda_auth import LambdaAuthSettings, RefreshingKeyResolver, build_resolver
from rearview.config.settings import hash_key
from rearview.errors import ConfigurationError
from rearview.shared.principal import Principal

DIGEST_A = hash_key("key-a")
REGION = "us-east-1"


def test_keys_from_ssm_and_secrets_manager(mocked_aws: None) -> None:
    key_map = json.dumps({DIGEST_A: "tenant-a"})
    boto3.client("ssm").put_parameter(Name="/rearview/api-keys", Value=key_map, Type="SecureString")
    boto3.client("secretsmanager").create_secret(Name="rearview-keys", SecretString=key_map)
    for settings in (
        LambdaAuthSettings(api_keys_parameter="/rearview/api-keys"),
        LambdaAuthSettings(api_keys_secret="rearview-keys"),
    ):
        resolver = build_resolver(settings, region=REGION)
        assert resolver.principal_for("key-a") == Principal("tenant-a")
        assert resolver.principal_for("key-b") is None


def test_an_unreadable_key_map_fails_init_with_a_clear_error(mocked_aws: None) -> None:
    with pytest.raises(
        ConfigurationError,
        match=r"REARVIEW_API_KEYS_PARAMETER.*/missing cannot be read \(ParameterNotFound\)",
    ):
        build_resolver(LambdaAuthSettings(api_keys_parameter="/missing"), region=REGION)


def test_a_rotated_key_map_is_seen_after_max_age_or_a_forced_refresh(mocked_aws: None) -> None:
    ssm = boto3.client("ssm")
    ssm.put_parameter(Name="/keys", Value=json.dumps({DIGEST_A: "tenant-a"}), Type="SecureString")
    resolver = build_resolver(LambdaAuthSettings(api_keys_parameter="/keys"), region=REGION)
    assert isinstance(resolver, RefreshingKeyResolver)
    rotated = json.dumps({hash_key("key-b"): "tenant-b"})
    ssm.put_parameter(Name="/keys", Value=rotated, Type="SecureString", Overwrite=True)
    assert resolver.principal_for("key-a") == Principal("tenant-a")  # cached for max_age (300 s)
    resolver.expire()
    assert resolver.principal_for("key-a") is None
    assert resolver.principal_for("key-b") == Principal("tenant-b")


@pytest.mark.parametrize(
    ("flag", "setting"),
    [("--parameter", "api_keys_parameter"), ("--secret", "api_keys_secret")],
)
def test_put_api_key_stores_a_hash_the_lambda_resolves(mocked_aws: None, flag: str, setting: str) -> None:
    name = "/rearview/dev/api-keys" if flag == "--parameter" else "rearview-dev-api-keys"
    assert put_api_key.main([flag, name, "--tenant", "acme", "--key", "key-a", "--region", REGION]) == 0
    assert put_api_key.main([flag, name, "--tenant", "globex", "--key", "key-b", "--region", REGION]) == 0

    resolver = build_resolver(LambdaAuthSettings(**{setting: name}), region=REGION)
    assert (resolver.principal_for("key-a"), resolver.principal_for("key-b")) == (
        Principal("acme"),
        Principal("globex"),
    )
    stored = _stored(flag, name)
    assert stored == {hash_key("key-a"): "acme", hash_key("key-b"): "globex"}
    assert "key-a" not in json.dumps(stored)  # only the hash is ever stored


def test_put_api_key_revokes_a_key(mocked_aws: None) -> None:
    name = "/rearview/dev/api-keys"
    put_api_key.main(["--parameter", name, "--tenant", "acme", "--key", "key-a", "--region", REGION])
    assert put_api_key.main(["--parameter", name, "--revoke", "--key", "key-a", "--region", REGION]) == 0
    assert _stored("--parameter", name) == {}


def test_put_api_key_generates_a_key_when_none_is_given(
    mocked_aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "/rearview/dev/api-keys"
    assert put_api_key.main(["--parameter", name, "--tenant", "acme", "--region", REGION]) == 0
    key = capsys.readouterr().out.strip()
    assert len(key) >= 40
    resolver = build_resolver(LambdaAuthSettings(api_keys_parameter=name), region=REGION)
    assert resolver.principal_for(key) == Principal("acme")


def _stored(flag: str, name: str) -> dict[str, str]:
    if flag == "--parameter":
        raw = boto3.client("ssm", region_name=REGION).get_parameter(Name=name, WithDecryption=True)
        value = raw["Parameter"]["Value"]
    else:
        value = boto3.client("secretsmanager", region_name=REGION).get_secret_value(SecretId=name)[
            "SecretString"
        ]
    data = json.loads(value)
    assert isinstance(data, dict)
    return data

"""The memory browser's session secret on Lambda, read from Secrets Manager (on moto).

template.yaml (MemoryBrowser=Enabled) generates the secret and passes its ARN in
`REARVIEW_UI_SECRET_ARN`; `handlers._ui_secret.read_ui_secret` reads it at init.
"""

from __future__ import annotations

import boto3
import pytest

from handlers._ui_secret import MIN_SECRET_CHARS, read_ui_secret
from rearview.errors import ConfigurationError

REGION = "us-east-1"


def test_the_generated_secret_is_read_by_arn(mocked_aws: None) -> None:
    client = boto3.client("secretsmanager", region_name=REGION)
    # What the template's GenerateSecretString makes: 64 characters, no punctuation.
    value = client.get_random_password(PasswordLength=64, ExcludePunctuation=True)["RandomPassword"]
    arn = client.create_secret(Name="stack-ui-session", SecretString=value)["ARN"]
    assert read_ui_secret(arn, REGION) == value


@pytest.mark.parametrize(
    ("create", "message"),
    [
        (None, r"REARVIEW_UI_SECRET_ARN.*cannot be read \(ResourceNotFoundException\)"),
        ({"SecretString": "x" * (MIN_SECRET_CHARS - 1)}, r"shorter than 32 characters"),
        ({"SecretBinary": b"\x00" * 64}, r"holds no SecretString"),
    ],
)
def test_an_unusable_secret_fails_init_naming_the_setting(
    mocked_aws: None, create: dict[str, object] | None, message: str
) -> None:
    client = boto3.client("secretsmanager", region_name=REGION)
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:missing-AbCdEf"
    if create is not None:
        arn = client.create_secret(Name="weak", **create)["ARN"]  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=message):
        read_ui_secret(arn, REGION)


def test_an_empty_arn_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"REARVIEW_UI_SECRET_ARN.*must name the session secret"):
        read_ui_secret("  ")

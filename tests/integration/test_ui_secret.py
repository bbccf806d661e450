"""The memory browser's session secret on Lambda, read from Secrets Manager (on moto).

template.yaml (MemoryBrowser=Enabled) generates the secret and passes its ARN in
`REARVIEW_UI_SECRET_ARN`; `handlers._ui_secret.read_ui_secret` reads it at init.
"""

from __future__ import annotations

import boto3
import pytest
from pydantic import SecretStr

from handlers._ui_secret import MIN_SECRET_CHARS, read_ui_secret, session_secret
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


def test_the_session_secret_is_none_when_the_ui_is_off_and_an_inline_one_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REARVIEW_UI_SECRET_ARN", "arn:aws:secretsmanager:us-east-1:123456789012:secret:x")
    assert session_secret(False, None) is None
    assert session_secret(True, SecretStr("s" * 40)) == "s" * 40  # e.g. `sam local`: no AWS call
    monkeypatch.setenv("REARVIEW_UI_SECRET_ARN", "")
    with pytest.raises(ConfigurationError, match=r"REARVIEW_UI=true needs the session secret"):
        session_secret(True, None)

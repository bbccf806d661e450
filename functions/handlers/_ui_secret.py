"""The memory browser's session-signing key on Lambda (template parameter `MemoryBrowser=Enabled`).

The template generates a Secrets Manager secret and hands the function its ARN
(`REARVIEW_UI_SECRET_ARN`), never the value: the value would otherwise show in the function's
configuration to anyone allowed `lambda:GetFunctionConfiguration`. The function reads it once at
init (the one secret its role may read). Every instance signs and checks sessions with the same
key, so a session survives cold starts and load-balancing across instances.
"""

from __future__ import annotations

from typing import Final

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from rearview.errors import ConfigurationError

__all__ = ["MIN_SECRET_CHARS", "SECRET_ARN_SETTING", "read_ui_secret", "session_secret"]

SECRET_ARN_SETTING: Final = "REARVIEW_UI_SECRET_ARN"  # noqa: S105 - a variable name, not a secret
MIN_SECRET_CHARS: Final = 32
"""Shorter keys are refused: the template generates 64 alphanumeric characters (about 380 bits)."""


class _SecretArn(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REARVIEW_", extra="ignore")

    ui_secret_arn: str = ""
    """The template sets it to "" when MemoryBrowser=Disabled."""


def session_secret(ui: bool, given: SecretStr | None, region: str | None = None) -> str | None:
    """The key the memory browser signs sessions with; None when the UI is off.

    `REARVIEW_UI_SECRET` (`given`, e.g. `sam local`) wins; else the secret named by
    `REARVIEW_UI_SECRET_ARN` is read. With the UI on and neither set, `ConfigurationError`: a
    per-instance random key would sign users out at every cold start and on every other instance.
    """
    if not ui:
        return None
    if given is not None and given.get_secret_value().strip():
        return given.get_secret_value()
    arn = _SecretArn().ui_secret_arn.strip()
    if not arn:
        raise ConfigurationError(
            SECRET_ARN_SETTING,
            "REARVIEW_UI=true needs the session secret: set REARVIEW_UI_SECRET_ARN (template "
            "MemoryBrowser=Enabled does) or REARVIEW_UI_SECRET",
        )
    return read_ui_secret(arn, region)


def read_ui_secret(secret_id: str, region: str | None = None) -> str:
    """The secret's string value; `ConfigurationError` naming `REARVIEW_UI_SECRET_ARN` if unusable.

    Unreadable (missing, no permission), binary-only or shorter than `MIN_SECRET_CHARS`: all fail
    init, since signing sessions with a weak or per-instance key would be worse than no UI.
    """
    from aws_lambda_powertools.utilities.parameters import SecretsProvider
    from botocore.config import Config

    from rearview.api.lambda_auth import _read_errors  # one wording for every unreadable secret

    if not secret_id.strip():
        raise ConfigurationError(SECRET_ARN_SETTING, "must name the session secret when REARVIEW_UI=true")
    provider = SecretsProvider(boto_config=Config(region_name=region))
    with _read_errors(SECRET_ARN_SETTING, secret_id):
        value = provider.get(secret_id, force_fetch=True)
    if not isinstance(value, str):
        raise ConfigurationError(SECRET_ARN_SETTING, f"secret {secret_id} holds no SecretString")
    if len(value.strip()) < MIN_SECRET_CHARS:
        raise ConfigurationError(
            SECRET_ARN_SETTING, f"secret {secret_id} is shorter than {MIN_SECRET_CHARS} characters"
        )
    return value.strip()

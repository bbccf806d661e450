"""`config.env_check`: the names it knows are the settings' own, so a real variable is never called a typo."""

from __future__ import annotations

from rearview.api.lambda_auth import LambdaAuthSettings
from rearview.config.env_check import OTHER_READERS, misspelt, setting_names
from rearview.config.settings import Settings


def test_every_variable_the_lambda_reads_is_known_without_importing_it() -> None:
    """The CLI does not import the Lambda's auth settings (a cold-start cost): its list must cover them."""
    assert setting_names(LambdaAuthSettings) - setting_names(Settings) <= OTHER_READERS


def test_a_close_name_is_named_and_a_known_or_distant_one_is_not() -> None:
    environ = {
        "REARVIEW_EMBEDER": "x",
        "REARVIEW_AUTH_MODE": "jwt",
        "REARVIEW_SKIP_DEPLOYED": "1",
        "HOME": "/",
    }
    assert misspelt(environ, setting_names(Settings)) == [
        "REARVIEW_EMBEDER is not a Rearview setting and is ignored; did you mean REARVIEW_EMBEDDER?"
    ]

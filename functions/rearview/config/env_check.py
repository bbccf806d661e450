"""Misspelt `REARVIEW_*` variables: named, with the setting they were probably meant for.

pydantic-settings ignores a variable no setting reads (`extra="ignore"`: a deployment may carry
variables of another version), so `REARVIEW_EMBEDER=hashing` used to change nothing, silently.
The CLI warns, on stderr, about each such variable that is close to a real setting's name.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from pydantic_settings import BaseSettings

PREFIX = "REARVIEW_"
CLOSE = 0.8
"""`difflib` similarity at or above which an unknown name is taken for a misspelling."""
OTHER_READERS = frozenset(
    {
        "REARVIEW_AUTH_MODE",
        "REARVIEW_API_KEYS_JSON",
        "REARVIEW_API_KEYS_PARAMETER",
        "REARVIEW_API_KEYS_SECRET",
        "REARVIEW_API_KEYS_MAX_AGE_S",
        "REARVIEW_API_KEY",
        "REARVIEW_URL",
        "REARVIEW_TEMPLATE",
    }
)
"""Read by the Lambda's `LambdaAuthSettings`, client examples and the Lambda build, not `Settings`."""


def setting_names(*models: type[BaseSettings]) -> frozenset[str]:
    """The variables `models` read: the prefix and each field's name in upper case."""
    return frozenset(PREFIX + name.upper() for model in models for name in model.model_fields)


def misspelt(environ: Mapping[str, str], known: frozenset[str]) -> list[str]:
    """One warning per `REARVIEW_*` variable that no setting reads and that is close to one that does."""
    known = known | OTHER_READERS
    warnings = []
    for name in sorted(environ):
        if not name.startswith(PREFIX) or name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=CLOSE)
        if close:
            warnings.append(f"{name} is not a Rearview setting and is ignored; did you mean {close[0]}?")
    return warnings

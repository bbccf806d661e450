"""Obvious credentials in memory content: found by a few linear-time patterns, refused by default.

A memory is read back into agents' contexts, exported and archived: a key written into one leaks
wherever the memory goes, from its content or from any other text it stores (`stored_text`: tags,
metadata, session id, speakers, cues). `find_secret` names the first kind of credential a text
holds (never the text itself); `screen` applies the policy (`REARVIEW_SECRETS`), `screen_all` to
every field:

- `refuse` (default): `InvalidInputError` on the field, naming the kind and how to allow it;
- `warn`: the write goes ahead; the note is returned for the receipt (and logged, without the secret);
- `allow`: nothing is checked.

Only shapes that are credentials and little else are matched (a 40-character string is a secret only
after an `aws_secret_access_key` label: a git commit id is 40 characters too). Every pattern is
linear: bounded repetitions, no nested quantifiers (`tests/security/test_linear_time.py` times
every module-level pattern).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Final, Literal

from rearview.errors import InvalidInputError

__all__ = ["SECRET_PATTERNS", "SecretsPolicy", "find_secret", "screen", "screen_all"]

log = logging.getLogger(__name__)

SecretsPolicy = Literal["refuse", "warn", "allow"]

SECRET_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("a private key block", re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        "an AWS secret access key",
        re.compile(
            r"(?i:aws_?secret_?access_?key|secret_?access_?key)[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?"
            r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
        ),
    ),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{60,251})\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[0-9]{6,20}-[0-9A-Za-z-]{6,200}")),
    ("an OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,300}")),
)
"""The kinds of credential refused, each with its pattern (the first that matches names the kind)."""

_RANDOM_KEY: Final = re.compile(r"[0-9]")
"""An OpenAI key's body is random base62: a digit in it tells it from `sk-` before a hyphenated phrase."""


def find_secret(text: str) -> str | None:
    """The kind of the first credential found in `text` ("a GitHub token"), or None."""
    for kind, pattern in SECRET_PATTERNS:
        for match in pattern.finditer(text):
            if kind != "an OpenAI API key" or _looks_random(match.group()):
                return kind
    return None


def _looks_random(token: str) -> bool:
    body = token[3:]
    return bool(_RANDOM_KEY.search(body)) and body.lower() != body and body.upper() != body


def screen(text: str, field: str, policy: SecretsPolicy) -> str | None:
    """Apply `policy` to `text`: raises under `refuse`, returns the note under `warn`, else None.

    The error and the note name `field` and the kind of credential, never the text.
    """
    if policy == "allow":
        return None
    kind = find_secret(text)
    if kind is None:
        return None
    if policy == "refuse":
        raise InvalidInputError(
            field,
            f"looks like it holds {kind}; memories are shown to agents, exported and archived, so "
            "credentials are refused: remove it (a password manager is the place for it), or set "
            "REARVIEW_SECRETS=warn (store, with a warning) or allow",
        )
    note = f"{field} looks like it holds {kind}; stored anyway (REARVIEW_SECRETS=warn)"
    log.warning("%s", note)
    return note


def screen_all(texts: Iterable[tuple[str, str]], policy: SecretsPolicy) -> list[str]:
    """`screen` each `(field, text)`: raises for the first refused, else the warnings, in order."""
    notes = [screen(text, field, policy) for field, text in texts] if policy != "allow" else []
    return [note for note in notes if note is not None]

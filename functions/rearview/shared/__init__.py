"""Small helpers any layer may import: each knows nothing of the service, an adapter or the API.

- `clock`: the injected `Clock` every timestamp comes from (`SystemClock`; `ManualClock` in tests).
- `ids`: new memory and event ids (ULIDs, sortable by creation time).
- `lazy`: `Lazy`, a value (an adapter's SDK client) built on first use, once, whatever threads race.
- `retry`: bounded retries for what botocore's own retry modes do not cover.
- `yield_points`: where a long call may step aside while a lighter tenant's call runs.
- `principal`: who a credential authenticates (a tenant and perhaps an agent), and reading key maps.
- `scopes`: the dedup scope keys, which memories a duplicate may be merged into.
- `distribution`: the installable name, and the command that adds an extra to this installation.
- `port_check`: whether a TCP port can be listened on (standard library only:
  `infra/ports_free.py` imports it before anything is installed).

This `__init__` imports nothing, so a helper costs only its own import.
"""

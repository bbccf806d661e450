"""The one place onnxruntime is imported: with its telemetry off, as an offline product must have it.

onnxruntime's wheels (1.2x on Linux and macOS) create a device id and an event store under
`$XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime/` and queue usage events for upload, unless
`ORT_DISABLE_TELEMETRY=1` is set before the library loads; `disable_telemetry_events()` after the
import is too late (the id and the process event are already written). Rearview sets it (a user's
own value wins) and imports onnxruntime only through `onnxruntime()`.
"""

from __future__ import annotations

import os
from typing import Any

TELEMETRY_SWITCH = "ORT_DISABLE_TELEMETRY"


def onnxruntime() -> Any:
    """The onnxruntime module (untyped), loaded with telemetry off; ImportError when not installed."""
    os.environ.setdefault(TELEMETRY_SWITCH, "1")
    import onnxruntime as ort

    return ort


def quantization() -> Any:
    """`onnxruntime.quantization`, loaded the same way."""
    onnxruntime()
    from onnxruntime import quantization as q

    return q

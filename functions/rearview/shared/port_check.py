"""Whether a TCP port can be listened on, asked before anything starts. Standard library only.

`rearview serve` asks before its banner, its store and its embedder; `make serve-aws-local` asks
(`infra/ports_free.py`) before it installs anything, so a taken port is one line at once.
"""

from __future__ import annotations

import errno
import socket

__all__ = ["ensure_port_free"]


def ensure_port_free(host: str, port: int) -> int:
    """The port `host:port` can be listened on (for port 0, the free one the system chose); else OSError.

    Bound and released as uvicorn binds, so a taken port is one line and exit 1, not a banner
    followed by uvicorn's traceback. `serve --port 0` then serves on the returned port (another
    process could take it in the instant between: uvicorn's bind then fails, and `serve` says so).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise OSError(f"port {port} is in use (try --port)") from exc
            raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        bound: int = probe.getsockname()[1]
        return bound

"""`make serve-aws-local`'s first step: are the ports it needs free? Standard library only.

It runs before the install (`.[dev]`, minutes on a fresh clone), so a taken port is one line at
once, not after the install. `infra/local_aws.py` asks the same again before it starts anything.

    python3 infra/ports_free.py [--moto-port 5000] [--aws-endpoint URL] [-- rearview serve args]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def serve_address(serve_args: Sequence[str]) -> tuple[str, int]:
    """The host and port `rearview serve` will bind: its `--host`/`--port`, else REARVIEW_*, else defaults."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--host", default=os.environ.get("REARVIEW_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("REARVIEW_PORT", "8080")))
    known, _ = parser.parse_known_args(serve_args)
    return known.host, known.port


def taken_port(serve_args: Sequence[str], moto_port: int | None) -> str | None:
    """One line saying which port is taken and what to pass instead; None when all are free.

    `moto_port` None: no moto server is started (an `--aws-endpoint` was given).
    """
    from rearview.shared.port_check import ensure_port_free

    host, port = serve_address(serve_args)
    checks = [(host, port, f"-- --port {port + 1}, or make serve-aws-local ARGS='--port {port + 1}'")]
    if moto_port is not None:
        checks.append(("127.0.0.1", moto_port, f"--moto-port {moto_port + 1}"))
    for check_host, check_port, advice in checks:
        try:
            ensure_port_free(check_host, check_port)
        except OSError as exc:
            return f"local_aws: error: {str(exc).replace('--port', advice)}"
    return None


def main(argv: Sequence[str]) -> int:
    """Exit 1 with one line on stderr when a port is taken, else 0 (silently)."""
    argv = list(argv)
    serve_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--moto-port", type=int, default=5000)
    parser.add_argument("--aws-endpoint")
    args, _ = parser.parse_known_args(own)
    problem = taken_port(serve_args, None if args.aws_endpoint else args.moto_port)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))  # before any install
    raise SystemExit(main(sys.argv[1:]))

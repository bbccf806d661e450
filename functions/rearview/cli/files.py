"""The commands that move memories in and out as files: `import`, `ingest`, `export`.

An import checks every line before it writes (unless `--continue-on-error`); an export appears
complete or not at all.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rearview.cli.common import EXIT_FAILED, EXIT_OK, LOCAL_TENANT_HELP, tenant_of
from rearview.cli.console import counts, plural, printable, progress
from rearview.config.settings import Settings
from rearview.errors import InvalidInputError
from rearview.models import DEFAULT_AGENT

if TYPE_CHECKING:
    from rearview.cli.import_file import ImportRun

NO_MERGE_THRESHOLD = 1.01
"""A near-duplicate threshold above any cosine: `import --no-merge` merges exact duplicates only."""


def add_import(imp: argparse.ArgumentParser) -> None:
    """`import`'s arguments: the file, the tenant, and how to merge, fail and map other systems' exports."""
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


def add_ingest(ing: argparse.ArgumentParser) -> None:
    """`ingest`'s arguments: the conversation file, its session, and who writes it where."""
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


def add_export(exp: argparse.ArgumentParser) -> None:
    """`export`'s options: one tenant or all, and the output file."""
    which = exp.add_mutually_exclusive_group()
    which.add_argument("--tenant", help=LOCAL_TENANT_HELP)
    which.add_argument("--all-tenants", action="store_true", help="every tenant in the store")
    exp.add_argument("--output", "-o", type=Path, metavar="FILE", help="write here (default: stdout)")
    exp.set_defaults(func=_export)


def _import(settings: Settings, args: argparse.Namespace) -> int:
    from rearview.bootstrap import build_service
    from rearview.cli.import_file import ImportRun, lines

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
        build_service(settings), args.source, args.file, tenant_of(settings, args), per_user,
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
    from rearview.cli.ingest_file import IngestRun, calls, read_conversation
    from rearview.models import Visibility

    conversation = read_conversation(args.file)  # a bad message is a usage error: nothing written
    run = IngestRun(
        build_service(settings), tenant_of(settings, args), args.session_id or args.file.stem, args.agent,
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
    tenants = sorted(store.tenants()) if args.all_tenants else [tenant_of(settings, args)]
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

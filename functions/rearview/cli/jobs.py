"""The lifecycle jobs run once from the command line: `decay`, `archive`, `reconcile`, `cues`.

Each runs for every tenant (or `--tenant`) and may stop at `--budget-s` (exit 3); the next run
resumes where it stopped.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rearview.cli.common import EXIT_OK, EXIT_STOPPED
from rearview.cli.console import plural, printable
from rearview.config.settings import Settings

if TYPE_CHECKING:
    from rearview.service.lifecycle import JobReport
    from rearview.service.lifecycle.job_names import JobName

JOB_HELP: dict[JobName, str] = {
    "decay": "archive memories whose strength decayed below the threshold (importance 5 never)",
    "archive": "archive memories that reach their retention before the next run (renew recalled ones)",
    "reconcile": "rewrite stale index documents, drop those of archived/deleted memories, index missing ones",
    "cues": "write recall cues for active memories that have none, with the language model (REARVIEW_LLM)",
}


def add_job(cmd: argparse.ArgumentParser, job: JobName) -> None:
    """A job's options: the tenant (default: all) and the time budget."""
    cmd.add_argument("--tenant", help="only this tenant (default: all)")
    cmd.add_argument(
        "--budget-s",
        type=_positive_seconds,
        default=None,
        metavar="S",
        help="stop after this many seconds (exit status 3); the next run resumes where it stopped",
    )
    cmd.set_defaults(func=_job, job=job)


def _positive_seconds(text: str) -> float:
    """`--budget-s`: a number of seconds above 0 (argparse turns the ValueError into exit 2)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not seconds > 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"must be above 0 seconds, got {text}")
    return seconds


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

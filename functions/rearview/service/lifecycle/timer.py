"""`LifecycleTimer`: the lifecycle rounds of `rearview serve`, in a background thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from rearview.errors import InvalidInputError
from rearview.service.lifecycle.budget import Deadline
from rearview.service.lifecycle.job_names import DEFAULT_JOBS, JobName
from rearview.service.lifecycle.reports import JobReport
from rearview.service.lifecycle.service import LifecycleService

log = logging.getLogger(__name__)


class LifecycleTimer:
    """Runs `LifecycleService.run_all` every `interval_s` in a daemon thread (for `rearview serve`).

    At `start()` the thread first runs `startup_jobs` (default `reconcile`: index what a crash
    between a store commit and its index write left out, drop what it left behind), then the first
    round `first_delay_s` later. A failing run is logged and the timer goes on; `stop()` asks the
    thread to finish after the current page at the latest.
    """

    def __init__(
        self,
        lifecycle: LifecycleService,
        interval_s: float,
        budget_s: float,
        jobs: Sequence[JobName] = DEFAULT_JOBS,
        first_delay_s: float = 60.0,
        startup_jobs: Sequence[JobName] = ("reconcile",),
    ) -> None:
        if interval_s <= 0:
            raise InvalidInputError(
                "lifecycle_interval_s", f"must be > 0 to start a timer (got {interval_s})"
            )
        self.lifecycle = lifecycle
        self.interval_s = interval_s
        self.budget_s = budget_s
        self.jobs = tuple(jobs)
        self.startup_jobs = tuple(startup_jobs)
        self.first_delay_s = min(first_delay_s, interval_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the background thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="rearview-lifecycle", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to stop and wait up to `timeout` seconds for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run_once(self, jobs: Sequence[JobName] | None = None) -> list[JobReport]:
        """One round of `jobs` (default: the timer's) for every tenant, within `budget_s` or to `stop()`."""
        budget = _Stoppable(Deadline(self.budget_s), self._stop)
        reports = self.lifecycle.run_all(self.jobs if jobs is None else tuple(jobs), budget=budget)
        for report in reports:
            log.info("lifecycle %s", report.model_dump_json())
        return reports

    def _loop(self) -> None:
        if self.startup_jobs:
            try:
                self.run_once(self.startup_jobs)
            except Exception:
                log.exception("lifecycle startup round failed; the regular rounds go on")
        delay = self.first_delay_s
        while not self._stop.wait(delay):
            try:
                self.run_once()
            except Exception:  # a failed round must not end the timer: the next one resumes
                log.exception("lifecycle round failed; the next round resumes from the checkpoints")
            delay = self.interval_s


@dataclass
class _Stoppable:
    deadline: Deadline
    stop: threading.Event

    def expired(self) -> bool:
        return self.stop.is_set() or self.deadline.expired()

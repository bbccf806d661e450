"""A real single-node OpenSearch (2.19.1 + k-NN) for Rearview's tests.

The node runs in one JVM assembled from Maven Central artifacts by
``tests/engines/opensearch/fetch.sh`` (no Docker, no distribution tarball).
Only the standard library is used here.

Typical use::

    from tests.engines.opensearch_node import OpenSearchNode, external_url

    url = external_url()
    if url is None:
        with OpenSearchNode.start() as node:
            run_tests_against(node.url)

If ``REARVIEW_OPENSEARCH_URL`` is set, tests should use that node instead of
starting one (see :func:`external_url`).

Run ``python -m tests.engines.opensearch_node`` to start a node and keep it
up until Ctrl-C (``make opensearch``).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Self

__all__ = [
    "ENV_URL",
    "OpenSearchError",
    "OpenSearchNode",
    "ensure_fetched",
    "external_url",
]

#: Environment variable naming an already running node to use instead.
ENV_URL = "REARVIEW_OPENSEARCH_URL"
#: Line prefix the Java launcher prints once HTTP is bound.
READY_MARKER = "REARVIEW_OPENSEARCH_READY"
#: Line prefix the launcher prints when startup fails (it then exits 1).
FAILED_MARKER = "REARVIEW_OPENSEARCH_FAILED"
#: Launcher main class (tests/engines/opensearch/src/...).
MAIN_CLASS = "dev.rearview.testnode.RearviewTestNode"

_HERE = Path(__file__).resolve().parent
FETCH_SCRIPT = _HERE / "opensearch" / "fetch.sh"

_LOG_TAIL_LINES = 60
_HOME_PREFIX = "rearview-opensearch-"
_PIDS_FILE = "pids"  # "<python pid> <jvm pid>", for sweeping abandoned homes
_live_nodes: weakref.WeakSet[OpenSearchNode] = weakref.WeakSet()
_fetched: dict[str, Path] = {}  # "cache" -> cache directory, once fetched


class OpenSearchError(RuntimeError):
    """The test OpenSearch node could not be fetched, started or reached."""


def external_url() -> str | None:
    """Return ``$REARVIEW_OPENSEARCH_URL`` without a trailing slash, or None.

    When set (and not blank) it names an external node that tests should use
    instead of starting their own.
    """
    value = os.environ.get(ENV_URL, "").strip()
    return value.rstrip("/") or None


def ensure_fetched() -> Path:
    """Run ``fetch.sh`` once per process and return the cache directory.

    The first run on a machine downloads ~60 MB through Maven (about 10 s on
    a fast link); later runs are a no-op that takes milliseconds.

    Raises:
        OpenSearchError: if the script fails; the message holds its output.
    """
    cached = _fetched.get("cache")
    if cached is not None and (cached / ".stamp").is_file():
        return cached
    proc = subprocess.run(
        ["bash", str(FETCH_SCRIPT)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise OpenSearchError(
            f"{FETCH_SCRIPT} failed with exit code {proc.returncode}:\n{_tail(proc.stdout + proc.stderr)}"
        )
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise OpenSearchError(f"{FETCH_SCRIPT} printed no cache directory")
    _fetched["cache"] = Path(lines[-1])
    return _fetched["cache"]


def _java_executable() -> str:
    """Pick the ``java`` binary: $REARVIEW_OPENSEARCH_JAVA, $JAVA_HOME, PATH."""
    explicit = os.environ.get("REARVIEW_OPENSEARCH_JAVA")
    if explicit:
        return explicit
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise OpenSearchError("no 'java' on PATH (OpenSearch 2.19 needs Java 17+)")
    return found


def _jvm_options(heap: str, home: Path) -> list[str]:
    """JVM flags: small fixed heap, serial GC (2-core machines), Netty tuned
    as in OpenSearch's own jvm.options."""
    return [
        f"-Xms{heap}",
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        "-XX:+ExitOnOutOfMemoryError",
        "-XX:-UsePerfData",
        "-Xss1m",
        "-Djava.awt.headless=true",
        "-Dfile.encoding=UTF-8",
        "-Djava.locale.providers=SPI,COMPAT",
        f"-Djava.io.tmpdir={home / 'tmp'}",
        "-Dio.netty.noUnsafe=true",
        "-Dio.netty.noKeySetOptimization=true",
        "-Dio.netty.recycler.maxCapacityPerThread=0",
        "-Dio.netty.allocator.numDirectArenas=0",
    ]


def _tail(text: str, lines: int = _LOG_TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _health(url: str, timeout_s: float = 2.0) -> str | None:
    """Return the cluster health status ("green", ...) or None if unreachable."""
    try:
        with urllib.request.urlopen(
            f"{url}/_cluster/health?wait_for_status=yellow&timeout=1s",
            timeout=timeout_s,
        ) as resp:
            body = json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError):
        return None
    status = body.get("status")
    return status if isinstance(status, str) else None


class OpenSearchNode:
    """A running single-node OpenSearch child process.

    Create one with :meth:`start`; stop it with :meth:`stop` (graceful) or
    :meth:`kill` (SIGKILL, to simulate the engine dying mid-test), or use it
    as a context manager. The JVM runs in its own process group and exits by
    itself if this Python process dies (it watches its stdin pipe).
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        home: Path,
        port: int,
        started_in_s: float,
        log_file: IO[bytes],
    ) -> None:
        """Wrap an already started launcher; use :meth:`start` instead."""
        self._process = process
        self._home = home
        self._port = port
        self._log_file = log_file
        #: Seconds from spawning the JVM to a yellow/green cluster.
        self.started_in_s = started_in_s
        _live_nodes.add(self)

    # -- lifecycle -------------------------------------------------------

    @classmethod
    def start(
        cls,
        port: int | None = None,
        heap: str = "512m",
        timeout_s: float = 180,
        settings: Mapping[str, str] | None = None,
    ) -> OpenSearchNode:
        """Fetch if needed, launch a node and wait until it is usable.

        Args:
            port: HTTP port on 127.0.0.1; None lets the node bind a free one.
            heap: JVM heap (-Xms/-Xmx), e.g. "512m" or "1g".
            timeout_s: how long to wait for a yellow/green cluster.
            settings: extra node settings, passed as ``-Ekey=value``.

        Returns:
            The running node; its :attr:`url` answers requests.

        Raises:
            OpenSearchError: on fetch failure, JVM exit or timeout; the
                message ends with the tail of the node's log (the log file
                itself is kept until a start() after this process exits).
        """
        cache = ensure_fetched()
        classpath = (cache / "classpath").read_text(encoding="utf-8").strip()
        _sweep_stale_homes()
        home = Path(tempfile.mkdtemp(prefix=_HOME_PREFIX))
        (home / "tmp").mkdir()
        log_path = home / "node.log"
        log_file = open(log_path, "wb")  # noqa: SIM115 - closed in _cleanup
        cmd = [
            _java_executable(),
            *_jvm_options(heap, home),
            "-cp",
            classpath,
            MAIN_CLASS,
            "--home",
            str(home),
            "--port",
            str(port if port is not None else 0),
            "--watch-stdin",
        ]
        for key, value in (settings or {}).items():
            cmd.append(f"-E{key}={value}")

        began = time.monotonic()
        process = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        (home / _PIDS_FILE).write_text(f"{os.getpid()} {process.pid}\n", encoding="utf-8")
        deadline = began + timeout_s
        bound_port: int | None = None
        try:
            while True:
                if process.poll() is not None:
                    log = _read(log_path)
                    reason = next(
                        (ln for ln in log.splitlines() if ln.startswith(FAILED_MARKER)),
                        "(no failure line; see log)",
                    )
                    raise OpenSearchError(
                        f"OpenSearch exited with code {process.returncode} during "
                        f"startup: {reason.removeprefix(FAILED_MARKER).strip()}\n"
                        f"log tail ({log_path}):\n{_tail(log)}"
                    )
                if bound_port is None:
                    bound_port = _find_ready_port(log_path)
                if bound_port is not None:
                    status = _health(f"http://127.0.0.1:{bound_port}")
                    if status in ("green", "yellow"):
                        break
                if time.monotonic() > deadline:
                    raise OpenSearchError(
                        f"OpenSearch not ready within {timeout_s:.0f}s; "
                        f"log tail ({log_path}):\n{_tail(_read(log_path))}"
                    )
                time.sleep(0.2)
        except BaseException:
            # Keep the home (and its node.log) for inspection; a later start()
            # sweeps it once this process is gone.
            _terminate(process, grace_s=5)
            log_file.close()
            raise
        return cls(process, home, bound_port, time.monotonic() - began, log_file)

    def stop(self, grace_s: float = 20) -> None:
        """Stop gracefully (SIGTERM), SIGKILL after ``grace_s``; idempotent.

        Also deletes the node's temporary home directory.
        """
        _terminate(self._process, grace_s=grace_s)
        self._cleanup()

    def kill(self) -> None:
        """Hard-stop the JVM at once (SIGKILL to its process group).

        Meant for tests of "the engine died mid-request" paths. The home
        directory is kept until :meth:`stop` (or interpreter exit).
        """
        _terminate(self._process, grace_s=0)

    def _cleanup(self) -> None:
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        if not self._log_file.closed:
            self._log_file.close()
        shutil.rmtree(self._home, ignore_errors=True)
        _live_nodes.discard(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- introspection ---------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:41234`` (no trailing slash)."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def port(self) -> int:
        """The HTTP port the node is bound to."""
        return self._port

    @property
    def pid(self) -> int:
        """Process id of the JVM (also its process-group id)."""
        return self._process.pid

    @property
    def home(self) -> Path:
        """Temporary node home (data, config, ``node.log``)."""
        return self._home

    @property
    def log_path(self) -> Path:
        """The node's combined stdout/stderr log."""
        return self._home / "node.log"

    def is_running(self) -> bool:
        """True while the JVM process has not exited."""
        return self._process.poll() is None

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the node's log."""
        return _tail(_read(self.log_path), lines)

    def rss_bytes(self) -> int | None:
        """Resident memory of the JVM (Linux /proc), or None if unknown."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text(encoding="utf-8")
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return None

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"OpenSearchNode(url={self.url!r}, pid={self.pid}, {state})"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale_homes() -> None:
    """Delete node homes left behind by processes that were SIGKILLed."""
    for home in Path(tempfile.gettempdir()).glob(f"{_HOME_PREFIX}*"):
        try:
            pids = [int(p) for p in (home / _PIDS_FILE).read_text(encoding="utf-8").split()]
        except (OSError, ValueError):
            continue
        if pids and not any(_pid_alive(pid) for pid in pids):
            shutil.rmtree(home, ignore_errors=True)


def _find_ready_port(log_path: Path) -> int | None:
    for line in _read(log_path).splitlines():
        if line.startswith(READY_MARKER):
            try:
                return int(line.rsplit(":", 1)[1])
            except (IndexError, ValueError):
                return None
    return None


def _terminate(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the process group, SIGKILL after ``grace_s``; reap the child."""
    if process.poll() is not None:
        return
    sig = signal.SIGTERM if grace_s > 0 else signal.SIGKILL
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=grace_s if grace_s > 0 else 10)
        return
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


@atexit.register
def _stop_all() -> None:
    for node in list(_live_nodes):
        node.stop(grace_s=5)


def main(argv: list[str] | None = None) -> int:
    """Start a node and keep it up until interrupted (``make opensearch``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=9200, help="HTTP port (0: any free port)")
    parser.add_argument("--heap", default="512m", help="JVM heap, e.g. 512m")
    parser.add_argument("--timeout", type=float, default=180, help="startup timeout, seconds")
    args = parser.parse_args(argv)

    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    print(
        "starting OpenSearch (the first run fetches it; see tests/engines/README.md) ...",
        flush=True,
    )
    try:
        node = OpenSearchNode.start(port=args.port, heap=args.heap, timeout_s=args.timeout)
    except OpenSearchError as exc:
        print(exc, file=sys.stderr)
        return 1
    with node:
        print(f"OpenSearch ready in {node.started_in_s:.1f}s at {node.url} (log: {node.log_path})")
        print(f"  export {ENV_URL}={node.url}")
        print("Ctrl-C to stop.", flush=True)
        try:
            while node.is_running():
                time.sleep(1)
        except KeyboardInterrupt:
            print("stopping ...", flush=True)
            return 0
        print(
            f"OpenSearch exited unexpectedly; log tail:\n{node.log_tail()}",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""One built function under the AWS Lambda Runtime Interface Emulator, on this host, no container.

`BuiltFunction.start(...)` runs `aws-lambda-rie ... python3.13 -m awslambdaric <handler>` with the
working directory the function's *built* directory (`sam build` output: what Lambda unpacks in
`/var/task`), and the interpreter's path laid out as Lambda lays it: the function's code first,
then the built layer (`/opt/python`), then the runtime's own packages (`/var/runtime`: the
runtime interface client and boto3, which the layer leaves out because the runtime provides them).
The environment is the function's, from the template, plus what Lambda itself sets
(`AWS_LAMBDA_FUNCTION_*`, `AWS_EXECUTION_ENV`, `LAMBDA_TASK_ROOT`, region, credentials) and
nothing inherited from the test process. The one addition: `AWS_ENDPOINT_URL`, which points the
functions' boto3 at moto instead of AWS (LocalStack sets the same variable in its containers).

The emulator initialises the runtime on the first invocation (as Lambda does on a cold start)
and serves one invocation at a time; `invoke` serialises callers. Its log (the function's
stdout/stderr and the emulator's INIT/INVOKE reports) goes to `log_path`; `init_ms()` and
`invoke_ms()` read the reports.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.deployed.stack import REGION, FunctionSpec

__all__ = ["BuiltFunction", "Invocation", "free_port"]

INVOKE_PATH = "/2015-03-31/functions/function/invocations"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Invocation:
    """What one invocation returned: the payload, and whether it was a function error."""

    payload: Any
    error: bool
    wall_ms: float

    @property
    def error_type(self) -> str | None:
        return self.payload.get("errorType") if self.error else None


class BuiltFunction:
    """A running emulator for one function (see the module docstring)."""

    def __init__(
        self, spec: FunctionSpec, process: subprocess.Popen[bytes], port: int, log_path: Path
    ) -> None:
        self.spec = spec
        self.process = process
        self.port = port
        self.log_path = log_path
        self._lock = threading.Lock()

    @classmethod
    def start(
        cls,
        spec: FunctionSpec,
        *,
        code_dir: Path,
        layer_dir: Path,
        runtime_dir: Path,
        python: Path,
        emulator: Path,
        aws_endpoint: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
    ) -> BuiltFunction:
        port, api_port = free_port(), free_port()
        env = {
            **spec.environment,
            "AWS_LAMBDA_FUNCTION_NAME": f"rearview-deployed-{spec.logical_id}",
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(spec.timeout_s),
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",  # Lambda sets it; the MCP handler builds at init then
            "_HANDLER": spec.handler,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_ENDPOINT_URL": aws_endpoint,
            "LAMBDA_TASK_ROOT": str(code_dir),
            "LAMBDA_RUNTIME_DIR": str(runtime_dir),
            "PYTHONPATH": os.pathsep.join([str(layer_dir / "python"), str(runtime_dir)]),
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            **(extra_env or {}),
        }
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = log_path.open("ab")
        process = subprocess.Popen(
            [
                str(emulator),
                "--runtime-interface-emulator-address",
                f"127.0.0.1:{port}",
                "--runtime-api-address",
                f"127.0.0.1:{api_port}",
                str(python),
                "-m",
                "awslambdaric",
                spec.handler,
            ],
            cwd=code_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        function = cls(spec, process, port, log_path)
        function._wait_until_listening(timeout_s=30)
        return function

    def _wait_until_listening(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.spec.logical_id}: emulator exited {self.process.returncode}: {self.log()}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            except OSError:
                time.sleep(0.05)
                continue
            # The listener is up a moment before the emulator can take an invocation.
            time.sleep(0.2)
            return
        raise RuntimeError(f"{self.spec.logical_id}: emulator not listening within {timeout_s:.0f} s")

    def invoke(self, event: Any) -> Invocation:
        """Invoke synchronously (RequestResponse); waits for any invocation in progress first."""
        body = json.dumps(event).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{INVOKE_PATH}", data=body, method="POST"
        )
        with self._lock:
            started = time.perf_counter()
            with urllib.request.urlopen(request, timeout=self.spec.timeout_s + 30) as response:
                raw = response.read()
            wall_ms = (time.perf_counter() - started) * 1000
        payload = json.loads(raw) if raw else None
        error = isinstance(payload, dict) and {"errorType", "errorMessage"} <= payload.keys()
        return Invocation(payload, error, wall_ms)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def init_ms(self) -> list[float]:
        """Durations of the emulator's INIT reports (one per cold start)."""
        return [float(m) for m in re.findall(r"INIT REPORT\(durationMs: ([\d.]+)\)", self.log())]

    def invoke_ms(self) -> list[float]:
        """Handler durations the emulator reported, in invocation order."""
        return [
            float(m) for m in re.findall(r"INVOKE RTDONE\(status: \w+.*?duration: ([\d.]+)ms\)", self.log())
        ]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

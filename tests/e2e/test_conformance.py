"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`) against Rearview.

Its server scenarios run against a real server (`running_server`: the `rearview serve` app, hashing
embedder) in both eras: 0.1.16, the suite's stable release, at the 2025-11-25 handshake, and
0.2.0-alpha.12 at 2025-06-18, 2025-11-25 (handshake) and 2026-07-28 (stateless, per-request
`_meta`). Every scenario that applies to a memory server must pass; the rest are listed below in
`NOT_APPLICABLE`, each with why. Most of those exercise the suite's own fixture server ("everything
server": tools such as `test_simple_text`, prompts such as `test_simple_prompt`, resources under
`test://`) or optional capabilities Rearview does not declare (logging, completions, resource
subscriptions, sampling, elicitation, roots). A scenario the suite lists that is in neither set
fails the test, so a suite upgrade is noticed and classified, never silently skipped.

Each run gets a fresh server, so no state carries over and each has its tenant's whole request
burst (`tenant_request_burst`, 100): a run sends at most 96 requests in under a second (measured with
these versions), all from the one default tenant. A suite that grows past that is answered 429 and
fails here, visibly: then give `running_server` the rate limit off for this module.

Whatever a scenario tests, the suite also validates every JSON-RPC message Rearview sent against the
spec's JSON schema for the negotiated version (`wire-schema-valid`): that check must pass in every
scenario run, applicable or not (the error answers to the fixture names included).

Needs Node >= 22 (the suite calls `fs.globSync`). The packages are npm-installed once into
~/.cache/rearview/conformance-<version>, with npm's `node@22` beside them when the `node` on PATH is
older (bounded by a timeout). When npm cannot install them, the tests skip and say why (`pytest -rs`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.server import running_server

pytestmark = pytest.mark.slow

STABLE = "0.1.16"
"""The suite's release line: the 2025-era revisions (handshake)."""
PRERELEASE = "0.2.0-alpha.12"
"""The first line with the 2026-07-28 revision (stateless); it runs the 2025-era revisions too."""
RUNS = [
    (STABLE, "2025-11-25"),
    (PRERELEASE, "2025-06-18"),
    (PRERELEASE, "2025-11-25"),
    (PRERELEASE, "2026-07-28"),
]
"""(suite version, --spec-version): every revision Rearview serves (2025-03-26 it does not:
`rearview.api.protocol.UNSERVED_VERSIONS`)."""
NODE_PACKAGE = "node@22"
MIN_NODE = 22
INSTALL_TIMEOUT_S = 300
RUN_TIMEOUT_S = 120
CACHE = Path.home() / ".cache" / "rearview"
CLI = Path("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")

EXPECTED_TO_PASS = frozenset(
    {
        "server-initialize",
        "ping",
        "tools-list",
        "resources-list",
        "prompts-list",
        "dns-rebinding-protection",
        # Stateless: no Mcp-Session-Id is issued, which the suite reports as SKIPPED; a server that
        # began to issue one would have the DELETE / 404 contract checked here.
        "server-session-lifecycle",
        # 2025 era: stateless, so only the WARNING in ALLOWED_WARNINGS; 2026-07-28: three
        # concurrent POSTs are all served.
        "server-sse-multiple-streams",
        "server-stateless",
        "sep-2164-resource-not-found",
        "caching",
        "http-header-validation",
        # tools/list and prompts/list never answer `input_required` (needs no fixture).
        "input-required-result-unsupported-methods",
    }
)
"""Scenarios that apply to Rearview: each must run in every revision its tags name, and pass."""

_FIXTURE = "calls the suite's fixture-server {what}, which a memory server does not have"
NOT_APPLICABLE: dict[str, str] = {
    # Optional capabilities Rearview does not declare (so -32601, as the spec says).
    "logging-set-level": "logging/setLevel: Rearview declares no `logging` capability (tools report through results)",
    "tools-call-with-logging": "needs the `logging` capability and the fixture tool test_tool_with_logging",
    "completion-complete": "completion/complete: Rearview declares no `completions` capability; "
    + _FIXTURE.format(what="prompt test_prompt_with_arguments"),
    "resources-subscribe": "resources/subscribe: Rearview declares no `resources.subscribe` "
    "(stateless: no stream to deliver updates on)",
    "resources-unsubscribe": "resources/unsubscribe: no `resources.subscribe` capability (as above)",
    # Server-initiated requests: a stateless memory server never asks the client anything.
    "tools-call-sampling": "server-initiated sampling/createMessage (and the fixture tool test_sampling)",
    "tools-call-elicitation": "server-initiated elicitation/create (and the fixture tool test_elicitation)",
    "elicitation-sep1034-defaults": "server-initiated elicitation (fixture tool test_elicitation_sep1034_defaults)",
    "elicitation-sep1330-enums": "server-initiated elicitation (fixture tool test_elicitation_sep1330_enums)",
    "input-required-result-basic-elicitation": "2026-07-28 InputRequiredResult: Rearview never needs input "
    "from the client mid-call; " + _FIXTURE.format(what="tool test_input_required_result_elicitation"),
    "input-required-result-basic-sampling": "InputRequiredResult (sampling); "
    + _FIXTURE.format(what="tool test_input_required_result_sampling"),
    "input-required-result-basic-list-roots": "InputRequiredResult (roots); "
    + _FIXTURE.format(what="tool test_input_required_result_list_roots"),
    "input-required-result-request-state": "InputRequiredResult requestState; "
    + _FIXTURE.format(what="tool test_input_required_result_request_state"),
    "input-required-result-multiple-input-requests": "InputRequiredResult; "
    + _FIXTURE.format(what="tool test_input_required_result_multiple_inputs"),
    "input-required-result-multi-round": "InputRequiredResult over several rounds; "
    + _FIXTURE.format(what="tool test_input_required_result_multi_round"),
    "input-required-result-missing-input-response": "InputRequiredResult re-request; "
    + _FIXTURE.format(what="tool test_input_required_result_elicitation"),
    "input-required-result-non-tool-request": "InputRequiredResult from prompts/get; "
    + _FIXTURE.format(what="prompt test_input_required_result_prompt"),
    "input-required-result-result-type": "InputRequiredResult resultType; "
    + _FIXTURE.format(what="tool test_input_required_result_elicitation"),
    "input-required-result-tampered-state": "InputRequiredResult requestState integrity; "
    + _FIXTURE.format(what="tool test_input_required_result_tampered_state"),
    "input-required-result-capability-check": "InputRequiredResult vs client capabilities; "
    + _FIXTURE.format(what="tool test_input_required_result_capabilities"),
    "input-required-result-ignore-extra-params": "inputResponses handling; "
    + _FIXTURE.format(what="tool test_input_required_result_elicitation"),
    "input-required-result-validate-input": "inputResponses validation; "
    + _FIXTURE.format(what="tool test_input_required_result_elicitation"),
    # Fixture content: the suite's tools, prompts and resources (Rearview's own are tested in tests/e2e).
    "tools-call-simple-text": _FIXTURE.format(what="tool test_simple_text"),
    "tools-call-image": _FIXTURE.format(what="tool test_image_content") + " (Rearview returns text only)",
    "tools-call-audio": _FIXTURE.format(what="tool test_audio_content") + " (Rearview returns text only)",
    "tools-call-embedded-resource": _FIXTURE.format(what="tool test_embedded_resource"),
    "tools-call-mixed-content": _FIXTURE.format(what="tool test_multiple_content_types"),
    "tools-call-error": _FIXTURE.format(what="tool test_error_handling")
    + " (Rearview's isError results: tests/e2e/test_mcp_http.py and friends)",
    "tools-call-with-progress": _FIXTURE.format(what="tool test_tool_with_progress")
    + "; Rearview's tools answer in one result and send no progress",
    "json-schema-2020-12": _FIXTURE.format(what="tool json_schema_2020_12_tool")
    + " (it checks that keywords of that tool's schema survive tools/list)",
    "resources-read-text": _FIXTURE.format(what="resource test://static-text"),
    "resources-read-binary": _FIXTURE.format(what="resource test://static-binary"),
    "resources-templates-read": _FIXTURE.format(what="template test://template/{id}/data"),
    "prompts-get-simple": _FIXTURE.format(what="prompt test_simple_prompt"),
    "prompts-get-with-args": _FIXTURE.format(what="prompt test_prompt_with_arguments"),
    "prompts-get-embedded-resource": _FIXTURE.format(what="prompt test_prompt_with_embedded_resource"),
    "prompts-get-with-image": _FIXTURE.format(what="prompt test_prompt_with_image"),
    "server-sse-polling": _FIXTURE.format(what="tool test_reconnection")
    + " and needs an SSE response stream; Rearview answers every POST with JSON (stateless)",
    "http-custom-header-server-validation": "SEP-2243 Mcp-Param headers: needs a tool whose inputSchema marks "
    "parameters with `x-mcp-header`; no Rearview tool mirrors an argument into a header (pending in the suite)",
    # Extensions (never required by a revision): Rearview implements neither.
    "sep-2640-skills-directory": "skills extension (SEP-2640): Rearview serves no skills",
    "sep-2640-skills-enumeration": "skills extension (SEP-2640): Rearview serves no skills",
    "sep-2640-skills-manifest": "skills extension (SEP-2640): Rearview serves no skills",
    **{
        f"tasks-{name}": "tasks extension (SEP-2663): Rearview's tools finish within the request, no tasks"
        for name in (
            "lifecycle",
            "capability-negotiation",
            "wire-fields",
            "request-state-removal",
            "mrtr-input",
            "request-headers",
            "dispatch-and-envelope",
            "status-notifications",
            "required-task-error",
            "mrtr-composition",
        )
    },
}
"""Scenarios that do not apply to a stateless memory server, and why."""

EXCUSED_CHECKS: dict[tuple[str, str], str] = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"): (
        "needs the suite's diagnostic tool test_missing_capability (a tool that requires a client capability); "
        "no Rearview tool requires one"
    ),
    ("server-stateless", "sep-2575-missing-capability-http-400"): (
        "the same diagnostic tool test_missing_capability"
    ),
    ("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream"): (
        "needs the diagnostic tool test_streaming_elicitation; Rearview sends no request on a response stream"
    ),
    ("server-stateless", "sep-2575-server-no-log-without-loglevel"): (
        "needs the diagnostic tool test_logging_tool; Rearview sends no log notifications at all"
    ),
}
"""Failing checks inside applicable scenarios that need the suite's fixture tools (reported as
"Not testable"); every other check of those scenarios must pass."""

ALLOWED_WARNINGS: dict[tuple[str, str], str] = {
    ("server-sse-multiple-streams", "server-sse-multiple-streams-session"): (
        "2025 era: the suite only opens the streams inside a session; Rearview is stateless by design"
    ),
}
"""SHOULD-level findings (WARNING) accepted, and why; any other WARNING in an applicable scenario fails."""


@dataclass(frozen=True)
class Suite:
    node: Path
    cli: Path

    def __call__(self, *args: str, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.node), str(self.cli), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def _node_major(node: Path | str | None) -> int | None:
    if node is None or not Path(node).exists():
        return None
    try:
        out = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, check=False, timeout=10
        )
    except OSError:
        return None
    found = re.match(r"v(\d+)\.", out.stdout.strip())
    return int(found[1]) if found else None


def _usable_node(prefix: Path) -> Path | None:
    """A Node >= MIN_NODE: the one on PATH, else npm's `node` package installed under `prefix`."""
    for node in (shutil.which("node"), prefix / "node_modules" / ".bin" / "node"):
        major = _node_major(node)
        if node is not None and major is not None and major >= MIN_NODE:
            return Path(node)
    return None


def _installed_suite(version: str) -> Suite:
    """The suite at `version` and a Node to run it, npm-installing what is missing; skips when that fails."""
    prefix = CACHE / f"conformance-{version}"
    cli = prefix / CLI
    node = _usable_node(prefix)
    missing = ([] if cli.exists() else [f"@modelcontextprotocol/conformance@{version}"]) + (
        [] if node else [NODE_PACKAGE]
    )
    if missing:
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip(f"npm is not installed: cannot fetch {' and '.join(missing)}")
        prefix.mkdir(parents=True, exist_ok=True)
        command = [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--prefix",
            str(prefix),
            *missing,
        ]
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, check=False, timeout=INSTALL_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            pytest.skip(
                f"npm install {' '.join(missing)} took over {INSTALL_TIMEOUT_S} s (no registry access?)"
            )
        node = _usable_node(prefix)
        if result.returncode != 0 or not cli.exists() or node is None:
            pytest.skip(
                f"npm install {' '.join(missing)} failed (no registry access? install scripts blocked?): "
                f"{result.stderr.strip()[-300:]}"
            )
    assert node is not None
    return Suite(node, cli)


@pytest.fixture(scope="module")
def suites() -> dict[str, Suite]:
    return {version: _installed_suite(version) for version in (STABLE, PRERELEASE)}


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    """A fresh server for each run: no state, and no request-rate budget, carried from one to the next.

    No keys: served as the default tenant, as `rearview serve` on localhost (the DNS-rebinding
    scenario is for exactly that: a localhost server without authentication).
    """
    with running_server(tmp_path / "data") as mcp_url:
        yield mcp_url


def _listed(suite: Suite) -> dict[str, frozenset[str]]:
    """The suite's server scenarios, each with the revisions (or `extension`) it is tagged with."""
    result = suite("list", "--server")
    assert result.returncode == 0, result.stdout + result.stderr
    listed = {
        found[1]: frozenset(found[2].split(","))
        for found in re.finditer(r"^\s+- (\S+) \[([^\]]*)\]\s*$", result.stdout, re.MULTILINE)
    }
    assert listed, f"no scenario parsed from `conformance list --server`:\n{result.stdout}"
    return listed


def _results(out: Path) -> dict[str, list[dict[str, object]]]:
    """Scenario name -> its checks, from the `server-<scenario>-<timestamp>/checks.json` the suite saves."""
    found: dict[str, list[dict[str, object]]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        named = re.fullmatch(r"server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z", checks.parent.name)
        assert named, f"unexpected results folder {checks.parent.name}"
        found[named[1]] = json.loads(checks.read_text())
    return found


def test_the_lists_are_disjoint_and_every_exception_is_for_an_applicable_scenario() -> None:
    assert not EXPECTED_TO_PASS & NOT_APPLICABLE.keys()
    assert {scenario for scenario, _ in EXCUSED_CHECKS | ALLOWED_WARNINGS} <= EXPECTED_TO_PASS


@pytest.mark.parametrize("version", [STABLE, PRERELEASE])
def test_every_server_scenario_of_the_suite_is_classified(suites: dict[str, Suite], version: str) -> None:
    listed = _listed(suites[version])
    unknown = sorted(listed.keys() - EXPECTED_TO_PASS - NOT_APPLICABLE.keys())
    assert not unknown, (
        f"conformance {version} has server scenarios this test does not know: {unknown}; "
        "add each to EXPECTED_TO_PASS, or to NOT_APPLICABLE with why"
    )


@pytest.mark.parametrize(("version", "revision"), RUNS, ids=[f"{v}@{r}" for v, r in RUNS])
def test_every_applicable_scenario_passes(
    suites: dict[str, Suite], url: str, tmp_path: Path, version: str, revision: str
) -> None:
    suite = suites[version]
    required = {name for name, tags in _listed(suite).items() if revision in tags} & EXPECTED_TO_PASS
    out = tmp_path / "results"
    run = suite(
        "server", "--url", url, "--suite", "all", "--spec-version", revision, "--output-dir", str(out)
    )
    results = _results(out)
    summary = (
        run.stdout[run.stdout.find("=== SUMMARY") :] if "=== SUMMARY" in run.stdout else run.stdout[-4000:]
    )
    log = f"conformance {version} at {revision} (exit {run.returncode}):\n{summary}{run.stderr[-2000:]}"

    assert required <= results.keys(), f"not run: {sorted(required - results.keys())}\n{log}"
    unknown = sorted(results.keys() - EXPECTED_TO_PASS - NOT_APPLICABLE.keys())
    assert not unknown, f"unclassified scenarios ran: {unknown}"
    problems = []
    for scenario, checks in results.items():
        for check in checks:
            status, check_id = check["status"], str(check["id"])
            applicable = scenario in EXPECTED_TO_PASS
            failed = status == "FAILURE" and (applicable or check_id == "wire-schema-valid")
            warned = status == "WARNING" and applicable and (scenario, check_id) not in ALLOWED_WARNINGS
            if (failed and (scenario, check_id) not in EXCUSED_CHECKS) or warned:
                detail = check.get("errorMessage") or json.dumps(check.get("details"))[:500]
                problems.append(f"{scenario} / {check_id}: {status}: {detail}")
    assert not problems, "\n".join(problems) + "\n\n" + log

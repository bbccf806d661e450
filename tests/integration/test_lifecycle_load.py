"""Load: N memories through decay + archive; the hot store plus the archive always hold exactly N.

After the first run (a full scan, which builds the due order) every job reads what is due (at
least that, and at most one session listing more per memory it archives), never the tenant.

The scenario and the audit live in `tests/lifecycle_load_scenario.py` (which
`benchmarks/speed/lifecycle_load.py` times): after every round, active memories + archived memories ==
written, every stub points at an archive object holding its memory, and no memory is in the
archive twice.

- `sqlite`: the embedded backend (SQLite store + index, directory archive), 10,000 memories.
- `dynamodb`: the DynamoDB store and the S3 archive on moto (table and bucket from
  template.yaml), `REARVIEW_LOAD_MOTO_N` memories (default 1,000): moto answers every Query by
  sorting the whole index partition in Python, so its cost grows with N squared; 10,000 takes
  the better part of an hour (`benchmarks/speed/lifecycle_load.py --backend dynamodb --n 10000`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rearview.service.keyword_context import SESSION_LIMIT
from tests.lifecycle_load_scenario import ROUNDS, run

pytestmark = pytest.mark.slow

MOTO_N = int(os.environ.get("REARVIEW_LOAD_MOTO_N", "1000"))


def _moto_ready() -> str | None:
    try:
        import moto  # noqa: F401

        from rearview.backends.dynamodb import DynamoDBMemoryStore  # noqa: F401
        from rearview.backends.s3_archive import S3Archive  # noqa: F401
        from tests.fixtures.aws import resource_properties

        resource_properties("MemoryTable")
    except (ImportError, KeyError, FileNotFoundError) as exc:
        return f"DynamoDB store / S3 archive / moto fixture not ready: {exc}"
    return None


@pytest.mark.parametrize(
    ("backend", "n", "page_size"),
    [
        ("sqlite", 10_000, 100),
        pytest.param(
            "dynamodb",
            MOTO_N,
            1000,
            marks=pytest.mark.skipif(_moto_ready() is not None, reason=str(_moto_ready())),
        ),
    ],
)
def test_lifecycle_load_keeps_every_memory_exactly_once(
    backend: str, n: int, page_size: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rounds = run(backend, n, page_size, tmp_path)  # audits after every round
    seed, first, rerun, later, week = rounds
    assert len(rounds) == len(ROUNDS) + 1
    assert seed.hot == n and seed.in_archive == 0
    assert sum(first.archived.values()) == first.in_archive > 0 and first.hot + first.in_archive == n
    assert sum(rerun.archived.values()) == 0 and rerun.hot == first.hot  # idempotent
    assert later.in_archive > first.in_archive and later.hot + later.in_archive == n
    assert first.scan == {"decay": "full", "archive": "full"} and first.read["decay"] == n
    for r in (rerun, later, week):  # then only what is due: everything due, and a bounded overhead
        assert r.scan == {"decay": "due", "archive": "due"}
        for job in ("decay", "archive"):
            assert r.due[job] <= r.read[job] <= r.due[job] + r.archived[job] * SESSION_LIMIT, (r, job)
    assert week.archived["archive"] > 0 and week.read["archive"] < week.hot
    with capsys.disabled():
        per_k = {job: round(s / (n / 1000), 3) for job, s in first.seconds.items()}
        print(f"\n{backend} {n} memories, first round, seconds per 1,000: {per_k}; archived {first.archived}")

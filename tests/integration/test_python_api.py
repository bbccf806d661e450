"""The Python API (`from rearview import Memory`): the README's example, embedded and against a server."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from rearview import Memory
from rearview.client.remote import RemoteTransport, rebuilt_error
from rearview.config.settings import Settings
from rearview.errors import BackendError, ConflictError, InvalidInputError, NotFoundError, RearviewError
from rearview.models import MemoryStatus, SearchRequest, UpdateRequest, WriteRequest
from tests.e2e.server import running_server


def _example() -> str:
    """The example in `Memory`'s docstring, as runnable code."""
    doc = Memory.__doc__ or ""
    block = doc.split("Example (the README's)::", 1)[1]
    return textwrap.dedent(block).strip()


def _run(code: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<example>", "exec"), {})
    return out.getvalue().splitlines()


def _check(printed: list[str]) -> None:
    assert printed[0] == "The user prefers pnpm over npm"
    assert '"The user prefers pnpm over npm"' in "\n".join(printed[1:-1])  # the context block
    assert printed[-1] == "2"


def test_the_example_runs_embedded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")
    monkeypatch.chdir(tmp_path)
    _check(_run(_example()))
    assert (tmp_path / "memories" / "memories.sqlite3").exists()


def test_the_example_runs_against_a_server(tmp_path: Path) -> None:
    with running_server(tmp_path) as url:
        code = _example().replace('Memory(data_dir="./memories")', f"Memory(url={url!r})")
        _check(_run(code))


def test_every_operation_answers_the_same_models_both_ways(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "embedded", embedder="hashing")
    with running_server(tmp_path / "served") as url:
        for memory in (Memory(settings=settings), Memory(url=url)):
            with memory:
                first = memory.write("Standup is at 9:30", type="episodic", session_id="s1", tags=["team"])
                memory.write("Retro is on Fridays", type="episodic", session_id="s1", event_time="2026-03-02")
                assert memory.get(first.id).session_id == "s1"
                assert memory.update(first.id, importance=4).version == 2
                assert [e.action for e in memory.history(first.id).events] == ["created", "updated"]
                recall = memory.search("standup", types=["episodic"], explain=True)
                assert recall.results[0].id == first.id and recall.results[0].why is not None
                summary = memory.summarize(session_id="s1")
                assert summary.content and "Standup" in summary.content
                ingested = memory.ingest([{"role": "user", "content": "I live in Lisbon"}], session_id="s2")
                assert ingested.created >= 1
                assert memory.forget([first.id]).forgotten == [first.id]
                assert memory.restore(first.id).memory.status is MemoryStatus.ACTIVE
                assert memory.stats().by_type["episodic"] >= 3
                page = memory.browse(tags=["team"], types=["episodic"], limit=1)  # the memory, its summary
                rest = memory.browse(tags=["team"], types=["episodic"], cursor=page.cursor, limit=100)
                ids = [m.id for m in page.items + rest.items]
                assert first.id in ids and len(set(ids)) == len(ids) == 2 and rest.cursor is None
                assert not memory.browse(tags=["team", "absent"]).items
                assert len(memory.browse(session_id="s1", limit=100).items) >= 2


def test_errors_are_the_rearview_hierarchy_both_ways(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "embedded", embedder="hashing")
    with running_server(tmp_path / "served") as url:
        for memory in (Memory(settings=settings), Memory(url=url)):
            with memory:
                with pytest.raises(NotFoundError) as missing:
                    memory.get("01ARZ3NDEKTSV4RRFFQ69G5FAV")
                assert missing.value.memory_id == "01ARZ3NDEKTSV4RRFFQ69G5FAV"
                written = memory.write("Lunch is at noon")
                with pytest.raises(ConflictError):
                    memory.update(written.id, content="Lunch is at one", expected_version=7)
        with Memory(url=url) as remote, pytest.raises(InvalidInputError) as bad:
            remote.write("x", importance=9)  # refused here, before anything is sent
        assert bad.value.field == "importance"
        with Memory(url=url) as remote, pytest.raises(InvalidInputError) as bad:
            remote.browse(limit=500)  # refused by the server, rebuilt with its field
        assert bad.value.field == "limit"


def test_recall_cues_and_alternatives_both_ways(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "embedded", embedder="hashing")
    with running_server(tmp_path / "served") as url:
        for memory in (Memory(settings=settings, agent_id="planner"), Memory(url=url, agent_id="planner")):
            with memory:
                cues = ["what does Ana drink in the morning?", "Ana boisson préférée"]
                written = memory.write("Ana drinks green tea", cues=cues)
                stored = memory.get(written.id)
                assert [(c.text, c.by) for c in stored.cues] == [(cues[0], "planner"), (cues[1], "planner")]
                plain = memory.get(memory.write("Deploys run on Fridays").id)
                assert plain.cues == []
                assert not memory.search("thé vert").results  # another language: nothing alone
                recall = memory.search("thé vert", alternatives=["green tea", "Ana's morning drink"])
                assert [r.id for r in recall.results] == [written.id]
                assert memory.update(written.id, cues=["Ana's tea"]).cues[0].text == "Ana's tea"
                assert memory.update(written.id, importance=4).cues[0].text == "Ana's tea"  # None keeps
                assert memory.update(written.id, cues=[]).cues == []  # [] clears
                with pytest.raises(InvalidInputError) as many:
                    memory.write("Ana rides a bike", cues=[f"cue {i}" for i in range(6)])
                assert many.value.field == "cues"
                with pytest.raises(InvalidInputError) as bad:
                    memory.search("tea", alternatives=["a", "b", "c", "d"])
                assert bad.value.field == "alternatives"
                with pytest.raises(InvalidInputError) as one_string:
                    memory.write("Ana rides a bike", cues="how does Ana get around?")  # type: ignore[arg-type]
                assert one_string.value.field == "cues"


def test_as_of_and_verified_both_ways(tmp_path: Path) -> None:
    """Issue 47: `search(as_of=...)` and `update(verified=True)`, embedded and against a server."""
    settings = Settings.load(data_dir=tmp_path / "embedded", embedder="hashing")
    with running_server(tmp_path / "served") as url:
        for memory in (Memory(settings=settings, agent_id="auditor"), Memory(url=url, agent_id="auditor")):
            with memory:
                old = memory.write("The stand-up is at 09:30 every morning.")
                new = memory.write("The stand-up is at 10:00 every morning.", supersedes=old.id)
                between = memory.get(new.id).created_at - timedelta(microseconds=1)
                assert [r.id for r in memory.search("stand-up time", as_of=between).results] == [old.id]
                assert [r.id for r in memory.search("stand-up time").results] == [new.id]
                checked = memory.update(new.id, verified=True)
                assert checked.verified_by == "auditor" and checked.verified_at is not None
                assert memory.get(new.id).verified_at == checked.verified_at
                with pytest.raises(InvalidInputError) as future:
                    memory.search("stand-up time", as_of="2999-01-01T00:00:00Z")
                assert future.value.field == "as_of"


class _Recording(RemoteTransport):
    """A remote transport that records the tool arguments it would send, and sends nothing."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9/mcp", None, None)
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def _model(self, model: Any, tool: str, args: dict[str, Any]) -> Any:
        self.sent.append((tool, args))
        return None

    def _call(self, tool: str, args: dict[str, Any]) -> Any:
        self.sent.append((tool, args))
        raise _Sent


class _Sent(Exception):
    pass


def test_the_remote_transport_sends_cues_and_alternatives_only_when_given() -> None:
    remote = _Recording()
    remote.write(WriteRequest(content="Ana drinks green tea"))
    remote.write(WriteRequest(content="Ana drinks green tea", cues=["Ana's drink?"]))
    remote.update(UpdateRequest(memory_id="m1", importance=4))
    remote.update(UpdateRequest(memory_id="m1", cues=[]))
    for req in (SearchRequest(query="tea"), SearchRequest(query="tea", alternatives=["thé"])):
        with pytest.raises(_Sent):
            remote.search(req, explain=False)
    (_, write), (_, cued), (_, update), (_, cleared), (_, search), (_, phrased) = remote.sent
    assert "cues" not in write and cued["cues"] == ["Ana's drink?"]
    assert "cues" not in update and cleared["cues"] == []  # an empty list is sent: it clears them
    assert "alternatives" not in search and phrased["alternatives"] == ["thé"]


def test_a_server_error_is_rebuilt_with_its_fields() -> None:
    error = rebuilt_error(
        "Error executing tool memory_write: invalid_input: invalid `tags[0]`: must not be empty"
    )
    assert isinstance(error, InvalidInputError) and error.field == "tags[0]"
    assert str(error) == "invalid `tags[0]`: must not be empty"
    assert type(rebuilt_error("teapot: short and stout")) is RearviewError


def test_a_refused_key_is_an_authentication_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[api_keys]\n"right-key" = "alice"\n')
    with running_server(tmp_path) as url:
        with Memory(url=url, api_key="right-key") as memory:
            assert memory.stats().total == 0
        with Memory(url=url, api_key="wrong-key") as memory, pytest.raises(RearviewError, match="refused"):
            memory.stats()


def test_a_url_and_a_data_dir_are_refused_together(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as both:
        Memory(tmp_path, url="http://127.0.0.1:8080/mcp")
    assert both.value.field == "url"
    with pytest.raises(InvalidInputError, match="api_key"):
        Memory(api_key="k")


def test_import_rearview_stays_light() -> None:
    code = (
        "import sys, rearview; assert 'rearview.client' not in sys.modules and 'pydantic' not in sys.modules; "
        "from rearview import Memory; assert 'numpy' not in sys.modules and 'mcp' not in sys.modules; "
        "print(Memory.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Memory"


def test_an_unreachable_server_is_a_backend_error() -> None:
    with (
        Memory(url="http://127.0.0.1:9/mcp", timeout=2) as memory,
        pytest.raises(BackendError, match=r"127\.0\.0\.1:9"),
    ):
        memory.stats()


def test_the_agents_own_summary_replaces_the_offline_extract_both_ways(tmp_path: Path) -> None:
    """Issue 46.2: without a summary the receipt lists the sources; the agent's consolidation replaces it."""
    settings = Settings.load(data_dir=tmp_path / "embedded", embedder="hashing")
    with running_server(tmp_path / "served") as url:
        for memory in (Memory(settings=settings, agent_id="planner"), Memory(url=url, agent_id="planner")):
            with memory:
                ids = [
                    memory.write(text, type="episodic", session_id="s1").id
                    for text in ("We chose Postgres 16 for the orders DB", "Okay, noted")
                ]
                extract = memory.summarize(session_id="s1")
                assert extract.method == "extractive" and [s.id for s in extract.sources or []] == ids
                own = memory.summarize(session_id="s1", summary="Orders DB: Postgres 16 (chosen in s1).")
                assert (own.method, own.agent_id, own.superseded_ids) == ("agent", "planner", [extract.id])
                assert own.sources is None and memory.get(extract.id).status is MemoryStatus.SUPERSEDED

"""The `rearview` CLI as a person at a terminal uses it (embedded backend, hashing embedder)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rearview.cli import main
from rearview.ports import Completion
from tests.e2e.server import free_port


@pytest.fixture(autouse=True)
def _hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")


def _jsonl(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def _total(data: Path, capsys: pytest.CaptureFixture[str]) -> int:
    capsys.readouterr()
    assert main(["stats", "--data-dir", str(data)]) == 0
    total: int = json.loads(capsys.readouterr().out)["total"]
    return total


def test_import_search_stats_reindex(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    src = _jsonl(
        tmp_path / "memories.jsonl",
        [
            {"content": "The user prefers dark roast coffee", "tags": ["pref"]},
            {"content": "Deploys need a green CI run first", "type": "procedural", "importance": 4},
            {"content": "the user prefers dark roast coffee."},
            {"content": "", "type": "semantic"},
            {"content": "bad type", "type": "bogus"},
        ],
    )
    assert main(["--data-dir", str(data), "import", "--continue-on-error", str(src)]) == 1
    out, err = capsys.readouterr()
    assert "imported into tenant 'local': created 2, merged 1; 2 lines skipped" in out
    assert "memories.jsonl:4: skipped: invalid `content`" in err
    assert "memories.jsonl:5: skipped: invalid `type`: Input should be" in err

    assert main(["--data-dir", str(data), "search", "coffee roast"]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[0].startswith(" 1. [") and "dark roast coffee" in out.splitlines()[0]

    assert main(["--data-dir", str(data), "stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["total"] == 2 and stats["by_type"] == {"procedural": 1, "semantic": 1}

    (data / "index-hashing_256.sqlite3").unlink()  # the index is derived: rebuild it from the store
    assert main(["--data-dir", str(data), "reindex"]) == 0
    assert "tenant 'local': 2 memories indexed" in capsys.readouterr().out
    assert main(["--data-dir", str(data), "search", "green CI", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["type"] == "procedural"


def test_search_is_an_agents_search(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    src = tmp_path / "memories.jsonl"
    note = {
        "content": "Claude's private note on the flaky deploy",
        "agent_id": "claude-code",
        "visibility": "private",
    }
    src.write_text(json.dumps(note) + "\n")
    assert main(["--data-dir", str(data), "import", str(src)]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(data), "search", "flaky deploy"]) == 0
    assert "(no matching memories)" in capsys.readouterr().out
    assert main(["--data-dir", str(data), "search", "flaky deploy", "--agent", "claude-code"]) == 0
    assert "private note on the flaky deploy" in capsys.readouterr().out


def test_import_writes_nothing_when_a_line_does_not_parse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    src = _jsonl(tmp_path / "m.jsonl", [{"content": "first"}, "{not json", [1, 2], {"content": "last"}])
    assert main(["import", str(src), "--data-dir", str(data)]) == 1
    err = capsys.readouterr().err
    assert "m.jsonl:2: skipped: not JSON" in err and "m.jsonl:3: skipped: expected a JSON object" in err
    assert "nothing imported: 2 bad lines" in err
    assert _total(data, capsys) == 0


def test_a_line_the_service_would_refuse_imports_nothing_unless_told_to_continue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A blank content passes a schema check but not the service: the pre-check is the service's own.
    src = _jsonl(tmp_path / "m.jsonl", [{"content": "first"}, {"content": "   "}, {"content": "third"}])
    assert main(["import", str(src), "--data-dir", str(tmp_path / "a")]) == 1
    out, err = capsys.readouterr()
    assert "m.jsonl:2: skipped: invalid `content`: must not be empty" in err and "nothing imported" in err
    assert _total(tmp_path / "a", capsys) == 0

    assert main(["import", "--continue-on-error", str(src), "--data-dir", str(tmp_path / "b")]) == 1
    out, err = capsys.readouterr()
    assert "created 2; 1 line skipped" in out and "stopped" not in out
    assert _total(tmp_path / "b", capsys) == 2


def test_no_merge_keeps_near_duplicates_apart_but_still_merges_identical_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "Ticket from customer about login page: the user cannot sign in on the login page"
    src = _jsonl(
        tmp_path / "m.jsonl", [{"content": text}, {"content": text + " again"}, {"content": text + "."}]
    )
    assert main(["import", str(src), "--data-dir", str(tmp_path / "merged")]) == 0
    assert "created 1, merged 2\n" in capsys.readouterr().out

    assert main(["import", "--no-merge", str(src), "--data-dir", str(tmp_path / "apart")]) == 0
    assert "created 2, merged 1\n" in capsys.readouterr().out  # line 3 is line 1 normalized
    assert main(["import", "--no-merge", str(src), "--data-dir", str(tmp_path / "apart")]) == 0
    assert "tenant 'local': merged 3\n" in capsys.readouterr().out  # a re-run adds nothing
    assert _total(tmp_path / "apart", capsys) == 2


def test_global_options_are_accepted_before_and_after_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "before").mkdir()
    src = _jsonl(tmp_path / "m.jsonl", [{"content": "one fact"}])
    assert main(["--data-dir", str(tmp_path / "before"), "import", str(src)]) == 0
    assert main(["import", str(src), "--data-dir", str(tmp_path / "after")]) == 0
    assert _total(tmp_path / "before", capsys) == 1 and _total(tmp_path / "after", capsys) == 1
    # after the command wins over before it, as for any repeated option
    assert main(["--data-dir", str(tmp_path / "none"), "stats", "--data-dir", str(tmp_path / "after")]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 1


def test_help_documents_the_global_options_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for option in ("--host H", "--port P", "--config FILE", "--data-dir DIR"):
        assert option in out
    assert "2    usage error" in out and "1    runtime error" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("rearview ")


def test_serve_refuses_a_public_address_without_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--data-dir", str(tmp_path), "serve", "--host", "0.0.0.0"]) == 2
    assert "refusing to serve on 0.0.0.0 without API keys" in capsys.readouterr().err


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("rearview: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_ctrl_c_ends_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("rearview.cli.queries._stats", interrupted)
    assert main(["stats", "--data-dir", str(tmp_path)]) == 130
    assert capsys.readouterr().err == "rearview: interrupted\n"


def test_a_bad_setting_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REARVIEW_STORE", "postgres")
    assert main(["stats", "--data-dir", str(tmp_path)]) == 2
    assert "invalid `REARVIEW_STORE`: Input should be 'sqlite', 'dynamodb' or 'memory'" in _one_line_error(
        capsys
    )


def test_a_malformed_config_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.toml").write_text("[api_keys\nkey = 'tenant'\n")
    assert main(["stats", "--data-dir", str(tmp_path)]) == 2
    assert f"invalid `{tmp_path / 'config.toml'}`: is not valid TOML" in _one_line_error(capsys)
    assert main(["stats", "--config", str(tmp_path / "absent.toml")]) == 2
    assert "absent.toml does not exist" in _one_line_error(capsys)


def test_a_missing_import_file_is_a_runtime_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(tmp_path / "absent.jsonl"), "--data-dir", str(tmp_path)]) == 1
    assert "No such file or directory" in _one_line_error(capsys)


def test_an_unreachable_aws_endpoint_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in {
        "REARVIEW_STORE": "dynamodb",
        "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9",  # the discard port: nothing listens
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_MAX_ATTEMPTS": "1",
    }.items():
        monkeypatch.setenv(name, value)
    assert main(["stats", "--data-dir", str(tmp_path)]) == 1
    assert "127.0.0.1:9" in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("argv", "env", "served"),
    [([], None, True), (["--no-ui"], None, False), ([], "false", False), ([], "true", True)],
)
def test_serve_runs_the_memory_browser_unless_turned_off(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    env: str | None,
    served: bool,
) -> None:
    import uvicorn
    from starlette.testclient import TestClient
    from starlette.types import ASGIApp

    from rearview.api.access_log import ACCESS_LOGGER

    apps: list[ASGIApp] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: apps.append(app))
    # `serve` installs the access-line handler on stderr (here pytest's capture, closed after the
    # test): restore the logger as it was, or later tests log into a closed stream.
    monkeypatch.setattr(ACCESS_LOGGER, "handlers", list(ACCESS_LOGGER.handlers))
    monkeypatch.setattr(ACCESS_LOGGER, "propagate", ACCESS_LOGGER.propagate)
    monkeypatch.setattr(ACCESS_LOGGER, "level", ACCESS_LOGGER.level)
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")
    monkeypatch.setenv("REARVIEW_LIFECYCLE_INTERVAL_S", "0")
    if env is not None:
        monkeypatch.setenv("REARVIEW_UI", env)
    port = free_port()  # `serve` checks that its port is free before it starts
    assert main(["--data-dir", str(tmp_path), "serve", "--port", str(port), *argv]) == 0
    (app,) = apps
    page = TestClient(app, base_url=f"http://127.0.0.1:{port}").get("/ui/memories")
    assert page.status_code == (200 if served else 404)
    assert (f"Memory browser at http://127.0.0.1:{port}/ui" in capsys.readouterr().out) is served


def test_serve_on_a_busy_port_is_one_line_and_exit_1_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    import rearview.bootstrap

    def no_engines(*_: object) -> None:
        raise AssertionError("the store and the embedder start only once the port is known to be free")

    monkeypatch.setattr(rearview.bootstrap, "build_service", no_engines)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--data-dir", str(tmp_path), "serve", "--port", str(port)]) == 1
    out, err = capsys.readouterr()
    assert out == ""  # no banner
    assert err == f"rearview: error: port {port} is in use (try --port)\n"


def test_a_server_that_does_not_start_is_exit_1_not_the_budget_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    from rearview.api.access_log import ACCESS_LOGGER

    def startup_failure(*_: object, **__: object) -> None:
        raise SystemExit(3)  # what uvicorn.run does when its startup fails

    monkeypatch.setattr(uvicorn, "run", startup_failure)
    monkeypatch.setattr(ACCESS_LOGGER, "handlers", list(ACCESS_LOGGER.handlers))
    monkeypatch.setattr(ACCESS_LOGGER, "propagate", ACCESS_LOGGER.propagate)
    monkeypatch.setenv("REARVIEW_LIFECYCLE_INTERVAL_S", "0")
    assert main(["--data-dir", str(tmp_path), "serve", "--port", "0"]) == 1
    assert "rearview: error: the server did not start" in capsys.readouterr().err


@pytest.mark.parametrize("job", ["decay", "archive", "reconcile"])
def test_a_job_stopped_by_its_budget_is_exit_3_and_says_what_remains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], job: str
) -> None:
    src = _jsonl(tmp_path / "m.jsonl", [{"content": "one fact"}, {"content": "another fact entirely"}])
    assert main(["--data-dir", str(tmp_path), "import", str(src)]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(tmp_path), job, "--budget-s", "0.000001"]) == 3
    out, err = capsys.readouterr()
    assert "(no tenants)" not in out
    assert f"{job} stopped at --budget-s 1e-06: 1 tenant not done ('local'); the next run resumes" in err
    assert main(["--data-dir", str(tmp_path), job]) == 0
    assert json.loads(capsys.readouterr().out)["complete"] is True


@pytest.mark.parametrize("budget", ["-1", "0", "nan", "soon"])
def test_a_budget_that_is_not_a_positive_number_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], budget: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--data-dir", str(tmp_path), "decay", "--budget-s", budget])
    assert exited.value.code == 2
    assert "--budget-s" in capsys.readouterr().err


def test_the_cues_job_without_a_language_model_says_there_is_nothing_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _jsonl(tmp_path / "m.jsonl", [{"content": "one fact"}])
    assert main(["--data-dir", str(tmp_path), "import", str(src)]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(tmp_path), "cues", "--budget-s", "5"]) == 0
    assert "nothing to do without REARVIEW_LLM" in capsys.readouterr().out


class _CueModel:
    """A language model that gives every memory of a cue prompt the same two cues."""

    model_id = "fake:cues"

    def complete(self, system: str, prompt: str, max_tokens: int) -> str:
        return self.answer(system, prompt, max_tokens).text

    def answer(self, system: str, prompt: str, max_tokens: int) -> Completion:
        labels = re.findall(r"^\[(m\d+)\]", prompt, flags=re.MULTILINE)
        return Completion(
            json.dumps({label: ["what was noted?", "a noted fact"] for label in labels}), "end_turn"
        )


def test_the_cues_job_with_a_language_model_stops_at_its_bound_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rearview.bootstrap.build_language_model", lambda settings: _CueModel())
    monkeypatch.setenv("REARVIEW_LIFECYCLE_CUES_PER_RUN", "1")
    src = _jsonl(tmp_path / "m.jsonl", [{"content": "one fact"}, {"content": "another fact entirely"}])
    assert main(["--data-dir", str(tmp_path), "import", str(src)]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(tmp_path), "cues"]) == 3
    out, err = capsys.readouterr()
    assert json.loads(out)["cued"] == 1
    assert "cues stopped at REARVIEW_LIFECYCLE_CUES_PER_RUN: 1 tenant not done ('local')" in err
    assert main(["--data-dir", str(tmp_path), "cues"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["resumed"] and report["complete"] and report["cued"] == 1
    assert main(["--data-dir", str(tmp_path), "search", "what was noted?", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["why"]["cue"] == "what was noted?"


def test_a_job_on_an_empty_store_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data-dir", str(tmp_path), "decay", "--budget-s", "0.000001"]) == 0
    assert capsys.readouterr().out == "(no tenants)\n"


TRANSCRIPTS = {
    "a transcript": json.dumps({"messages": [{"role": "user", "content": "I prefer tea"}]}),
    "a pretty-printed transcript": json.dumps({"messages": [{"role": "user", "content": "hi"}]}, indent=2),
    "JSON Lines of messages": '{"role": "user", "content": "I prefer tea"}\n{"speaker": "Ann", "content": "ok"}',
    "OpenAI messages with names": '{"name": "Li", "content": "I prefer tea"}',
    "a message array": json.dumps([{"role": "user", "content": "I prefer tea"}]),
}


@pytest.mark.parametrize("text", TRANSCRIPTS.values(), ids=TRANSCRIPTS.keys())
def test_importing_a_conversation_points_to_ingest_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    src = tmp_path / "chat.json"
    src.write_text(text + "\n")
    for flags in ([], ["--continue-on-error"]):
        assert main(["--data-dir", str(tmp_path / "data"), "import", *flags, str(src)]) == 2
        err = capsys.readouterr().err
        assert "this is a conversation, not memories" in err and f"use `rearview ingest {src}`" in err
    assert _total(tmp_path / "data", capsys) == 0


def test_a_line_that_is_not_utf8_is_that_lines_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "m.jsonl"
    src.write_bytes(b'{"content": "caf\xe9 au lait"}\n{"content": "fine"}\n')
    assert main(["--data-dir", str(tmp_path / "data"), "import", str(src)]) == 1
    err = capsys.readouterr().err
    assert "m.jsonl:1: skipped: not UTF-8 (byte 0xe9 at offset 16)" in err and "Traceback" not in err
    assert _total(tmp_path / "data", capsys) == 0
    assert main(["--data-dir", str(tmp_path / "data"), "import", "--continue-on-error", str(src)]) == 1
    assert _total(tmp_path / "data", capsys) == 1


def test_an_unknown_key_in_a_memory_line_is_refused_not_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _jsonl(tmp_path / "m.jsonl", [{"content": "fine"}, {"content": "Tea", "tgas": ["x"]}])
    assert main(["--data-dir", str(tmp_path / "data"), "import", str(src)]) == 1
    assert "m.jsonl:2: skipped: unknown key `tgas`" in capsys.readouterr().err
    assert _total(tmp_path / "data", capsys) == 0


def test_search_escapes_control_characters_it_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rearview.bootstrap import build_service
    from rearview.config.settings import Settings
    from rearview.models import WriteRequest

    service = build_service(Settings.load(data_dir=tmp_path))
    service.write("local", WriteRequest(content="deploy notes\u202egnp.exe\u202c\nline two\ttabbed"))
    assert main(["--data-dir", str(tmp_path), "search", "deploy notes"]) == 0
    out = capsys.readouterr().out
    # the bidi override never reached storage (stripped at write); the breaks print escaped, one line
    # per hit (`console.printable` escapes format characters too, for data stored before: test_console)
    assert "deploy notesgnp.exe\\nline two\\ttabbed" in out
    assert "\u202e" not in out and out.count("\n") == 1


def test_the_banner_names_where_the_data_is(tmp_path: Path) -> None:
    from rearview.cli.serve import describe_data
    from rearview.config.settings import Settings

    assert describe_data(Settings.load(data_dir=tmp_path)) == f"data in {tmp_path}"
    aws_local = Settings.load(
        data_dir=tmp_path,
        store="dynamodb",
        index="opensearch",
        archive="s3",
        table_name="rearview-memories",
        opensearch_endpoint="http://127.0.0.1:9200",
        archive_bucket="rearview-archive-local",
    )
    described = describe_data(aws_local)
    assert described == (
        "data in DynamoDB table rearview-memories, OpenSearch at http://127.0.0.1:9200, "
        "archive in s3://rearview-archive-local/archive/"
    )
    assert str(tmp_path) not in described


def test_an_error_line_escapes_what_it_quotes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no\x1b[2Jsuch\nfile.jsonl"
    assert main(["--data-dir", str(tmp_path), "import", str(missing)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rearview: error: ") and err.count("\n") == 1
    assert "\x1b" not in err and "no\\x1b[2Jsuch\\nfile.jsonl" in err

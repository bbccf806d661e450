"""What makes a write cheaper must not change what is indexed: cached tokens, skipped neighbour rewrites."""

from __future__ import annotations

import unicodedata
from datetime import timedelta

import pytest

from rearview.backends.memory import InMemoryMemoryStore
from rearview.backends.sqlite_terms import fts_text
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import MemoryType, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from rearview.text import disallowed_control_chars, tokens
from tests.factories import T0, RecordingIndex


@pytest.mark.parametrize(
    "text",
    [
        "[8 May 2023] Caroline: we adopted a puppy\nMelanie: does it chew?\n",
        "我们养了一只小狗\n它叫什么名字",  # CJK runs end at a line break
        "café\n\u0301accent at a line start\r\nwindows line\n\nblank above",
        "ﬁne ligatures and Ｆｕｌｌｗｉｄｔｈ\nit’s o'clock",
        "",
        "a] b]] c ] d\n]\n] ",
    ],
)
def test_line_by_line_tokens_are_the_texts_tokens(text: str) -> None:
    assert fts_text(text) == " ".join(tokens(text))
    assert fts_text(text) == " ".join(tokens(text))  # and again, from the cache


def test_a_new_memory_rewrites_only_the_neighbours_whose_context_it_changes() -> None:
    clock = ManualClock(T0)
    index = RecordingIndex()
    service = MemoryService(InMemoryMemoryStore(clock), index, HashingEmbedder(256), clock)

    def write(content: str, hours: float) -> None:
        clock.advance(seconds=1)
        at = T0 + timedelta(hours=hours)
        service.write(
            "t1", WriteRequest(content=content, type=MemoryType.EPISODIC, session_id="s1", event_time=at)
        )

    write("a: morning", 0)
    write("b: evening", 10)  # more than six hours later: not a's neighbour, a's context stays
    write("c: night", 10.5)  # b's neighbour: b's context changes
    assert index.upserts == [["a: morning"], ["b: evening"], ["c: night", "b: evening"]]


def test_control_characters_are_exactly_unicodes_cc_less_tab_newline_and_return() -> None:
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    cc = [ord(ch) for ch in every if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r"]
    assert disallowed_control_chars(every) == cc
    assert disallowed_control_chars("a\x07b\x07\x85") == [7, 0x85]
    assert disallowed_control_chars("plain\ttext\r\n") == []

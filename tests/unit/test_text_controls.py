from __future__ import annotations

import pytest

from rearview.text import disallowed_control_characters


def test_finds_nul_and_other_controls_with_their_offsets() -> None:
    assert disallowed_control_characters("key\x00secret\x1b[0m\x7f\x85") == [
        (3, "U+0000"),
        (10, "U+001B"),
        (14, "U+007F"),
        (15, "U+0085"),
    ]


@pytest.mark.parametrize(
    "text", ["line one\nline two\r\n\tindented", "用户喜欢喝绿茶。", "emoji 🚀 and NBSP\xa0ok", ""]
)
def test_allows_tab_newline_carriage_return_and_printable_unicode(text: str) -> None:
    assert disallowed_control_characters(text) == []

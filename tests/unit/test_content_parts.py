"""`content_parts`: which sentences of a memory the index embeds beside its whole content."""

from __future__ import annotations

from rearview.text.parts import MAX_PARTS, PART_MAX_CHARS, PART_MIN_CHARS, content_parts

TURN = (
    "user: I'm looking for some yoga classes near my new apartment. Can you recommend any good studios "
    "in my area? By the way, I've been doing yoga twice a week and it helps with my anxiety. Thanks! "
    "I would prefer somewhere I can walk to."
)


def test_a_long_turn_is_its_sentences_without_the_speaker_and_a_short_one_joins_its_neighbour() -> None:
    assert content_parts(TURN) == [
        "I'm looking for some yoga classes near my new apartment.",
        "Can you recommend any good studios in my area?",
        "By the way, I've been doing yoga twice a week and it helps with my anxiety.",
        "Thanks! I would prefer somewhere I can walk to.",
    ]


def test_short_content_a_document_and_one_sentence_have_no_parts() -> None:
    assert content_parts("User prefers tea. Also coffee on Mondays.") == []
    document = "This is one of the many sentences of a long reply. " * 20
    assert len(document) > PART_MAX_CHARS and content_parts(document) == []
    one = "a single sentence without any stop " * 10
    assert len(one) >= PART_MIN_CHARS and content_parts(one) == []


def test_many_sentences_are_grouped_into_runs_of_consecutive_ones_in_order() -> None:
    sentences = [f"Sentence number {n} says more." for n in range(20)]
    parts = content_parts(" ".join(sentences))
    assert len(parts) == MAX_PARTS
    assert " ".join(parts) == " ".join(sentences)
    assert [len(p.split(". ")) for p in parts] == [3, 3, 3, 3, 2, 2, 2, 2]


def test_cjk_full_stops_and_line_breaks_end_sentences() -> None:
    text = "我最近在学德语，因为明年春天想去慕尼黑交换一个学期，所以每天晚上都练习一个小时的口语和听力。" * 4
    text += "\n我的父母住在密西沙加，我每隔一个星期天都会回家和他们一起吃晚饭，顺便帮妈妈打理花园里的番茄。"
    parts = content_parts(text)
    assert len(parts) == 5
    assert all(p.endswith("。") for p in parts)


def test_the_same_content_has_the_same_parts() -> None:
    assert content_parts(TURN) == content_parts(str(TURN))

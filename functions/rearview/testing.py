"""Test doubles that ship with Rearview, for its own tests and for code built on it.

Like httpx's `MockTransport`, these are first-class adapters of the ports in `rearview.ports`,
not mocks: each one is a real in-memory backend (or a port implementation) whose failures are
scripted, so a test states *which* call fails and *how*, and then asserts what the service
guarantees on that failure.

    Fault                   decides which call fails: the n-th one (once), or every one while `down`
    InjectedError           what a Fault raises by default: an error no adapter would raise
    FlakyMemoryStore        InMemoryMemoryStore whose `commit` consults a Fault
    FlakyMemoryIndex        InMemoryMemoryIndex whose `delete` consults a Fault
    FlakyArchive            InMemoryArchive whose `put` consults a Fault
    FlakyCheckpointStore    InMemoryCheckpointStore whose `save` consults a Fault
    UnavailableIndex        a MemoryIndex whose engine is down: every call raises IndexUnavailableError
    BrokenEmbedder          an Embedder whose model crashed: every call raises EmbedderError
    ScriptedModel           a LanguageModel that answers (or raises) from a script
    RecordingSleep          a `RetryPolicy.sleep` that records delays instead of sleeping

Nothing here does I/O or sleeps; none of it is imported by the service itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rearview.backends.memory import InMemoryArchive, InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.errors import EmbedderError, IndexUnavailableError
from rearview.models import HistoryEvent, Memory
from rearview.ports import ChannelHits, Completion, IndexDocument, IndexQuery, StoreWrite, Vector
from rearview.shared.clock import Clock

__all__ = [
    "BrokenEmbedder",
    "Fault",
    "FlakyArchive",
    "FlakyCheckpointStore",
    "FlakyMemoryIndex",
    "FlakyMemoryStore",
    "InjectedError",
    "RecordingSleep",
    "ScriptedModel",
    "UnavailableIndex",
]


class InjectedError(RuntimeError):
    """The failure a `Fault` raises unless told otherwise: deliberately not a `RearviewError`.

    Adapters translate SDK errors into `BackendError`s; an `InjectedError` stands for the crash
    nobody planned for (a bug, a killed process), which no layer may swallow.
    """


class Fault:
    """Which call of one operation fails, and with what.

    `Fault(on_call=n)` fails the n-th call (1-based) exactly once: the run that follows sees a
    healthy backend, which is how an interrupted-then-resumed job is tested. `Fault(down=True)`
    fails every call until the test sets `down = False` (an outage that ends). `error` builds the
    exception from a message naming the operation and the call number; `calls` counts every call.
    """

    def __init__(
        self,
        on_call: int | None = None,
        *,
        down: bool = False,
        error: Callable[[str], Exception] = InjectedError,
    ) -> None:
        self.on_call = on_call
        self.down = down
        self.error = error
        self.calls = 0

    def check(self, operation: str) -> None:
        """Count one call of `operation`; raise if this is the one that fails."""
        self.calls += 1
        if self.down or self.calls == self.on_call:
            raise self.error(f"{operation} #{self.calls}")


class FlakyMemoryStore(InMemoryMemoryStore):
    """An in-memory store whose `commit` fails as `fault` says (before anything is written)."""

    def __init__(self, fault: Fault, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self.fault = fault

    def commit(self, writes: Sequence[StoreWrite]) -> None:
        self.fault.check("commit")
        super().commit(writes)


class FlakyMemoryIndex(InMemoryMemoryIndex):
    """An in-memory index whose `delete` fails as `fault` says (before anything is removed)."""

    def __init__(self, fault: Fault, dimension: int | None = None) -> None:
        super().__init__(dimension)
        self.fault = fault

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        self.fault.check("index delete")
        super().delete(tenant_id, memory_ids)


class FlakyArchive(InMemoryArchive):
    """An in-memory archive whose `put` fails as `fault` says (before anything is stored)."""

    def __init__(self, fault: Fault) -> None:
        super().__init__()
        self.fault = fault

    def put(self, tenant_id: str, items: Sequence[tuple[Memory, Sequence[HistoryEvent]]]) -> str:
        self.fault.check("archive put")
        return super().put(tenant_id, items)


class FlakyCheckpointStore(InMemoryCheckpointStore):
    """An in-memory checkpoint store whose `save` fails as `fault` says (the old state is kept)."""

    def __init__(self, fault: Fault) -> None:
        super().__init__()
        self.fault = fault

    def save(self, tenant_id: str, job: str, state: str) -> None:
        self.fault.check("checkpoint save")
        super().save(tenant_id, job, state)


class UnavailableIndex:
    """A `MemoryIndex` whose engine is down: every call but `ensure_schema` raises IndexUnavailableError."""

    def ensure_schema(self) -> None:
        """Nothing to create (and nothing to fail: schema creation happens at deploy time)."""

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        raise IndexUnavailableError("connection refused")

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        raise IndexUnavailableError("connection refused")

    def erase(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        raise IndexUnavailableError("connection refused")

    def search(self, query: IndexQuery) -> ChannelHits:
        raise IndexUnavailableError("connection refused")

    def count(self, tenant_id: str) -> int:
        raise IndexUnavailableError("connection refused")


class BrokenEmbedder:
    """An `Embedder` whose model crashed: every embedding call raises EmbedderError."""

    def __init__(self, dimension: int = 8) -> None:
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"broken:{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        raise EmbedderError("model crashed")

    def embed_query(self, text: str) -> Vector:
        raise EmbedderError("model crashed")


class ScriptedModel:
    """A `LanguageModel` that returns (or raises) its scripted answers in order; `prompts` records them.

    A `str` answer stopped at `end_turn`; a `Completion` says its own stop reason. Running out of
    answers is an IndexError: the test scripted fewer calls than the code made.
    """

    def __init__(self, *answers: str | Completion | Exception) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    @property
    def model_id(self) -> str:
        return "scripted"

    def complete(self, system: str, prompt: str, max_tokens: int) -> str:
        return self.answer(system, prompt, max_tokens).text

    def answer(self, system: str, prompt: str, max_tokens: int) -> Completion:
        self.prompts.append(prompt)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer if isinstance(answer, Completion) else Completion(answer, "end_turn")


class RecordingSleep:
    """A `RetryPolicy.sleep` that records the delays instead of sleeping (`RetryPolicy(sleep=...)`)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)

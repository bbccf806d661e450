"""Strands Agents on Rearview: the hooks and tools of `rearview.integrations.strands`, with a stub model.

The stub is a Strands `Model` that answers canned turns and records the system prompt and the tools
it was given, so the agent runs its real loop (hooks, tool calls) with no LLM and no network.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("strands")

from strands import Agent
from strands.models import Model

from rearview import Memory
from rearview.config.settings import Settings
from rearview.integrations.strands import MEMORY_HEADER, RearviewMemoryHooks, memory_tools
from rearview.service.search.rendering import WEAK_RULE


class StubModel(Model):
    """Answers each call with the next canned turn: a text, or a tool call `(name, input)`."""

    def __init__(self, turns: list[str | tuple[str, dict[str, Any]]]) -> None:
        self.turns = list(turns)
        self.system_prompts: list[str | None] = []
        self.tool_names: list[list[str]] = []
        self.seen: list[Any] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(
        self, output_model: Any, prompt: Any, system_prompt: str | None = None, **kwargs: Any
    ) -> Any:
        raise NotImplementedError

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        self.system_prompts.append(system_prompt)
        self.tool_names.append([spec["name"] for spec in tool_specs or []])
        self.seen.append(messages[-1])
        turn = self.turns.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, str):
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": turn}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        else:
            name, args = turn
            yield {
                "contentBlockStart": {
                    "start": {"toolUse": {"name": name, "toolUseId": f"t{len(self.turns)}"}}
                }
            }
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": __import__("json").dumps(args)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(settings=Settings.load(data_dir=tmp_path, embedder="hashing")) as memory:
        yield memory


def test_the_hooks_ingest_a_conversation_and_recall_it_in_the_next(memory: Memory) -> None:
    first = StubModel(["Noted: Lisbon it is."])
    agent = Agent(
        model=first,
        system_prompt="You are helpful.",
        hooks=[RearviewMemoryHooks(memory, session_id="c1")],
        callback_handler=None,
    )
    agent("I moved to Lisbon last month and I work as a nurse.")
    assert first.system_prompts == ["You are helpful."]  # nothing to recall yet
    assert memory.stats().total >= 2  # the user's and the assistant's turns (and what they say)

    second = StubModel(["You live in Lisbon."])
    hooks = RearviewMemoryHooks(memory, session_id="c2")
    agent = Agent(model=second, system_prompt="You are helpful.", hooks=[hooks], callback_handler=None)
    result = agent("Which city did I move to, Lisbon or Porto?")
    assert str(result).strip() == "You live in Lisbon."
    [prompt] = second.system_prompts
    assert prompt is not None and prompt.startswith("You are helpful.\n\n" + MEMORY_HEADER)
    assert "I moved to Lisbon last month" in prompt
    assert agent.system_prompt == "You are helpful."  # restored after the invocation
    assert all(MEMORY_HEADER not in str(m) for m in agent.messages)  # never in the conversation

    third = StubModel(["Anything else?"])
    agent.model = third
    agent("Thanks")
    assert third.system_prompts[0] is not None and third.system_prompts[0].count(MEMORY_HEADER) <= 1


def test_the_hooks_can_recall_without_ingesting(memory: Memory) -> None:
    memory.write("The user's favourite editor is Helix")
    model = StubModel(["Helix."])
    agent = Agent(model=model, hooks=[RearviewMemoryHooks(memory, ingest=False)], callback_handler=None)
    agent("Which editor is my favourite, Helix or Vim?")
    assert model.system_prompts[0] is not None and "Helix" in model.system_prompts[0]
    assert agent.system_prompt is None
    assert memory.stats().total == 1


def test_memory_failures_do_not_stop_the_agent(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    unreachable = Memory(url="http://127.0.0.1:9/mcp", timeout=2)
    model = StubModel(["Hello."])
    agent = Agent(
        model=model,
        system_prompt="Be brief.",
        hooks=[RearviewMemoryHooks(unreachable)],
        callback_handler=None,
    )
    assert str(agent("hi there")).strip() == "Hello."
    assert model.system_prompts == ["Be brief."]
    assert "recall failed" in caplog.text and "ingest failed" in caplog.text


def test_the_model_remembers_and_recalls_through_the_tools(memory: Memory) -> None:
    model = StubModel([
        ("remember", {"content": "The user prefers pnpm over npm", "tags": ["tooling"]}),
        "I'll remember that.",
        ("recall", {"query": "which package manager does the user prefer, pnpm or npm?"}),
        "You prefer pnpm.",
    ])  # fmt: skip
    agent = Agent(model=model, tools=memory_tools(memory), callback_handler=None)
    agent("Remember that I prefer pnpm.")
    assert model.tool_names[0] == ["remember", "recall"]
    [stored] = memory.browse(tags=["tooling"]).items
    assert stored.content == "The user prefers pnpm over npm"
    assert "Remembered (created" in str(model.seen[1])  # the tool result the model read

    assert str(agent("Which package manager do I like?")).strip() == "You prefer pnpm."
    assert "The user prefers pnpm over npm" in str(model.seen[3])


def test_the_tools_take_recall_cues_and_alternative_phrasings(memory: Memory) -> None:
    model = StubModel([
        ("remember", {"content": "The user is allergic to peanuts", "cues": ["what can't the user eat?"]}),
        "Noted.",
        ("recall", {"query": "Erdnüsse?"}),
        "I don't know.",
        ("recall", {"query": "Erdnüsse?", "alternatives": ["allergic to peanuts"]}),
        "You are allergic to peanuts.",
        ("remember", {"content": "The user has six cats", "cues": [f"pet {i}" for i in range(6)]}),
        "I could not remember that.",
    ])  # fmt: skip
    agent = Agent(model=model, tools=memory_tools(memory), callback_handler=None)
    agent("Remember that I am allergic to peanuts.")
    [stored] = memory.browse().items
    assert [(c.text, c.by) for c in stored.cues] == [("what can't the user eat?", "default")]
    agent("Erdnüsse?")
    assert "Nothing relevant remembered." in str(model.seen[3]) or WEAK_RULE in str(model.seen[3])
    agent("Erdnüsse? (in English: peanuts)")
    assert "The user is allergic to peanuts" in str(model.seen[5])  # found through the alternative
    agent("Remember my six cats.")
    assert "Not remembered: invalid `cues`" in str(model.seen[7])


def test_long_turns_are_ingested_in_pieces_within_the_limits(memory: Memory) -> None:
    long_reply = " ".join(
        f"Step {n}: run the migration for shard {n} and check its row count." for n in range(120)
    )
    model = StubModel([long_reply])
    agent = Agent(
        model=model,
        hooks=[RearviewMemoryHooks(memory, session_id="long", recall=False)],
        callback_handler=None,
    )
    agent("How do I migrate the shards?")
    assert len(long_reply) > 4000
    assert memory.stats().total >= 3


def test_a_turn_holding_a_credential_is_refused_alone_and_reported(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    hooks = RearviewMemoryHooks(memory, session_id="c1")
    agent = Agent(model=StubModel(["Noted: Lisbon it is."]), hooks=[hooks], callback_handler=None)
    agent(f"I moved to Lisbon. The deploy token is {token}")
    stored = [h.content for h in memory.search("Lisbon", top_k=10).results]
    assert stored == ["assistant: Noted: Lisbon it is."]
    assert [(r.index, r.field) for r in hooks.refused] == [(0, "messages[0].content")]
    assert "did not remember turn 0" in caplog.text and "a GitHub token" in caplog.text
    assert token not in caplog.text

"""A barge-in in the middle of each kind of ordered-block step (design §4, contract §8.6).

The interrupted step stays pending and runs again on the next turn; what it wrote before the
cancellation is kept; steps that finished before it do not run again. ``set_memory``, ``noop``
and ``END`` steps have no ``await``: they cannot be interrupted half-way (the cancellation
lands at the next step's ``await``), which the first test shows for ``set_memory``.
"""

import asyncio
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path

import pytest

from tests.loop.loop_kit import (
    TOOL_HEADER,
    Chat,
    buttons,
    said,
    skill_md,
    started,
    write_project,
)
from tests.loop.test_skills import ANYTHING_ELSE
from voicegate.engine.history import ToolExecuted
from voicegate.engine.llm.port import LLMPort, Message, StreamItem
from voicegate.engine.llm.script import parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.seam import MemorySet, Say, ToolCancelled, Transcript, TurnEnded, TurnEvent
from voicegate.engine.tools.schema import ToolSpec

#: A tool body that hangs on its first call (the attempt is counted in memory first, so the
#: count survives the cancellation) and returns at once afterwards.
HANG_ONCE = (
    '    attempts = context.memory.get("attempts", 0) + 1\n'
    '    context.memory.set("attempts", attempts)\n'
    "    if attempts == 1:\n"
    "        await asyncio.Event().wait()\n"
)


def hanging_tool(name: str, buttons_from: str = "") -> str:
    """A tool that hangs once; with ``buttons_from`` it also sets one button per word."""
    body = HANG_ONCE
    if buttons_from:
        words = f'"{buttons_from}".split()'
        body += f"    context.set_buttons([Button(title=w, value=w) for w in {words}])\n"
    return (
        f'@tool(description="{name}")\n'
        f"async def {name}(context: ToolContext = None) -> ToolResult:\n{body}"
        "    return ToolResult()\n\n\n"
    )


def blocks_skill(name: str, steps: str, responses: str = "", private: str = "") -> dict[str, str]:
    files = {
        f"skills/{name}/skill.md": skill_md(
            "", f":::ordered_block id=main\nsteps:\n{steps}:::\n", name=name.title()
        ),
        f"skills/{name}/memory.yml": (
            f"schema:\n  private:\n    attempts: {{type: int}}\n{private}"
        ),
    }
    if responses:
        files[f"skills/{name}/responses.yml"] = f"responses:\n{responses}"
    return files


PROJECT = {
    "responses.yml": "responses:\n  utter_thanks:\n    - text: Thanks.\n",
    **blocks_skill(
        "lookup",
        "  - id: mark\n    set_memory: {marked: true}\n"
        "  - id: fetch\n    execute_tool: slow_lookup\n"
        "  - id: done\n    action: utter_thanks\n",
        "",
        "    marked: {type: bool}\n",
    ),
    "skills/lookup/tools.py": TOOL_HEADER + hanging_tool("slow_lookup"),
    **blocks_skill(
        "colors",
        "  - id: ask\n    collect: color\n    utterance: utter_ask_color\n"
        "  - id: done\n    action: utter_thanks\n",
        "  utter_ask_color:\n    - text: Which color?\n      buttons: {source: color_buttons}\n",
        "    color: {type: text}\n",
    ),
    "skills/colors/tools.py": "from rasa.mantle.tools.buttons import Button\n"
    + TOOL_HEADER
    + hanging_tool("color_buttons", "red blue"),
    **blocks_skill(
        "menu",
        "  - id: show\n    action: utter_menu\n"
        "  - id: wait\n    action: action_listen\n"
        "  - id: done\n    action: utter_thanks\n",
        "  utter_menu:\n    - text: Here is the menu.\n      buttons: {source: menu_buttons}\n",
    ),
    "skills/menu/tools.py": "from rasa.mantle.tools.buttons import Button\n"
    + TOOL_HEADER
    + hanging_tool("menu_buttons", "soup salad"),
    **blocks_skill(
        "chatty",
        "  - id: talk\n    instructions: Chat about the weather.\n"
        "    complete_when: session.chatty.done\n"
        "  - id: done\n    action: utter_thanks\n",
        "",
        "    done: {type: bool, llm_settable: true}\n",
    ),
    **blocks_skill(
        "caller",
        "  - id: run_inner\n    call: inner\n  - id: back\n    action: utter_back\n",
        "  utter_back:\n    - text: Back in the caller.\n",
    ),
    **blocks_skill(
        "plain",
        "  - id: ask\n    collect: name\n    utterance: utter_ask_name\n"
        "  - id: done\n    action: utter_thanks\n",
        "  utter_ask_name:\n    - text: What is your name?\n",
        "    name: {type: text}\n",
    ),
}
PROJECT["skills/caller/skill.md"] = PROJECT["skills/caller/skill.md"].replace(
    ":::\n",
    ":::\n\n:::ordered_block id=inner\nsteps:\n  - id: fetch\n    execute_tool: slow_inner\n:::\n",
    1,
)
PROJECT["skills/caller/tools.py"] = TOOL_HEADER + hanging_tool("slow_inner")


class StallingModel:
    """A scripted model that stalls on chosen requests (1-based) until cancelled."""

    def __init__(self, turns: list[dict[str, object]], stall_on: set[int]) -> None:
        self.inner = ScriptedLLM(parse_script({"turns": turns}))
        self.stall_on = stall_on
        self.count = 0
        self.stalled = asyncio.Event()

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        self.count += 1
        if self.count in self.stall_on:
            self.stalled.set()
            await asyncio.Event().wait()
        async for item in self.inner.stream(messages, tools):
            yield item


async def interrupt(chat: Chat, text: str, when: asyncio.Event | None = None) -> list[TurnEvent]:
    """Run a turn and cancel it once ``when`` is set (by default: once a hanging tool counted
    its attempt, i.e. it awaits); returns every event produced, delivered or not."""
    stream = chat.engine.turn("c1", Transcript(text))
    received: list[TurnEvent] = []
    reached = when or asyncio.Event()

    async def consume() -> None:
        async with stream:
            async for event in stream:
                received.append(event)
                if isinstance(event, MemorySet) and event.name.endswith(".attempts"):
                    reached.set()

    task = asyncio.create_task(consume())
    await reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return received + list(stream.undelivered())


def activate(skill: str) -> dict[str, object]:
    return {"calls": [{"activate": {"flow_id": skill}}]}


async def start(tmp_path: Path, turns: list[dict[str, object]], llm: LLMPort | None = None) -> Chat:
    return await Chat(write_project(tmp_path, PROJECT), turns, llm=llm).open()


def recorded(chat: Chat, name: str) -> list[ToolExecuted]:
    return [e for e in chat.history() if isinstance(e, ToolExecuted) and e.name == name]


async def test_execute_tool_interrupted_mid_await_runs_again_and_earlier_steps_do_not(
    tmp_path: Path,
) -> None:
    chat = await start(tmp_path, [activate("lookup")])
    events = await interrupt(chat, "look it up")
    assert ToolCancelled(events[0].turn_id, "t1-lookup-main-fetch", "slow_lookup") in events
    assert events[-1] == TurnEnded("t1", "cancelled")
    assert recorded(chat, "slow_lookup") == []
    assert chat.memory("lookup.marked") is True  # the set_memory step before it completed
    assert chat.memory("lookup.attempts") == 1  # written before the cancel: kept
    again = await chat.send("hello?")
    assert started(again) == ["slow_lookup"]
    assert not any(isinstance(e, MemorySet) and e.name == "lookup.marked" for e in again)
    assert said(again) == ["Thanks.", ANYTHING_ELSE]
    assert chat.requests == 1  # the retry needed no model call


async def test_collect_interrupted_while_its_question_is_prepared_asks_again(
    tmp_path: Path,
) -> None:
    chat = await start(
        tmp_path, [activate("colors"), {"calls": [{"set_fields": {"color": "red"}}]}]
    )
    events = await interrupt(chat, "colors")
    assert not any(isinstance(e, Say) for e in events)
    asked = await chat.send("hello?")
    assert said(asked) == ["Which color?"]
    assert buttons(asked) == [["red", "blue"]]
    assert said(await chat.send("red")) == ["Thanks.", ANYTHING_ELSE]


async def test_an_action_interrupted_during_delivery_is_delivered_next_turn(tmp_path: Path) -> None:
    chat = await start(tmp_path, [activate("menu")])
    await interrupt(chat, "menu")
    shown = await chat.send("hello?")
    assert said(shown) == ["Here is the menu."]  # then action_listen waits
    assert buttons(shown) == [["soup", "salad"]]
    assert said(await chat.send("soup")) == ["Thanks.", ANYTHING_ELSE]


async def test_a_guided_collect_call_interrupted_is_made_again(tmp_path: Path) -> None:
    model = StallingModel(
        [activate("plain"), {"calls": [{"set_fields": {"name": "Ada"}}]}], stall_on={2}
    )
    chat = await start(tmp_path, [], llm=model)
    assert said(await chat.send("my name")) == ["What is your name?"]
    await interrupt(chat, "Ada", when=model.stalled)
    cursor = chat.session.dialogue.top.cursor
    assert (cursor.index, cursor.engaged) == (0, True)  # still waiting for the answer
    answered = await chat.send("Ada")
    assert "Collect `name`" in chat.prompt(-2)
    assert "listen" not in chat.tools(-2)
    assert said(answered) == ["Thanks.", ANYTHING_ELSE]
    assert chat.memory("plain.name") == "Ada"


async def test_an_instructions_step_interrupted_mid_model_call_stays_current(
    tmp_path: Path,
) -> None:
    model = StallingModel(
        [
            activate("chatty"),
            {"steps": [{"calls": [{"set_fields": {"done": True}}]}]},
        ],
        stall_on={3},  # 1: activate, 2: the step's first call (no answer scripted), 3: stalls
    )
    chat = await start(tmp_path, [], llm=model)
    await chat.send("let's chat")
    events = await interrupt(chat, "nice weather", when=model.stalled)
    assert events[-1] == TurnEnded(events[-1].turn_id, "cancelled")
    assert chat.session.dialogue.top.cursor.index == 0  # still the instructions step
    finished = await chat.send("nice weather today")
    assert "### Current step (block main, step talk)" in chat.prompt()
    assert said(finished) == ["Thanks.", ANYTHING_ELSE]


async def test_a_call_step_interrupted_in_its_callee_continues_there(tmp_path: Path) -> None:
    chat = await start(tmp_path, [activate("caller")])
    events = await interrupt(chat, "go")
    assert any(isinstance(e, ToolCancelled) and e.name == "slow_inner" for e in events)
    frame = chat.session.dialogue.top
    assert [cursor.block_id for cursor in frame.blocks] == ["main", "inner"]
    resumed = await chat.send("hello?")
    assert started(resumed) == ["slow_inner"]
    assert said(resumed) == ["Back in the caller.", ANYTHING_ELSE]

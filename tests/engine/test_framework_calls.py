"""Post-write hooks and response button sources (tools reference; contract §7.5, §2.7)."""

from typing import Any

import pytest

from tests.engine.engine_kit import engine_for, open_call, project_with, sample_schema, script_of
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.loop.framework_calls import PostWriteHooks, run_button_source
from voicegate.engine.loop.stream import TurnChannel
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.seam import Buttons, MemorySet
from voicegate.engine.tools.buttons import Button
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import Tool, tool
from voicegate.engine.tools.result import ToolResult
from voicegate.errors import EngineError

CALLS: list[str] = []


@tool(description="Check the chosen card")
async def run_after_setting_selected_card_id(context: ToolContext) -> ToolResult:
    CALLS.append("selected_card_id")
    card = context.memory.get("selected_card_id")
    if card == "unknown":
        return ToolResult(llm_response={"error": "No card matches that label."})
    context.memory.set("card_list", [card])  # a write inside a hook: must not trigger hooks
    context.memory.set("customer_id", "C-from-hook")  # project field, maybe already set
    return ToolResult(llm_response={"error": None})


@tool(description="Would run after card_list writes")
async def run_after_setting_card_list(context: ToolContext) -> ToolResult:
    CALLS.append("card_list")
    return ToolResult()


@tool(description="Fails")
async def run_after_setting_color(context: ToolContext) -> ToolResult:
    raise RuntimeError("hook crashed")


@tool(description="Offers delivery windows")
async def delivery_windows(context: ToolContext) -> ToolResult:
    context.set_buttons([Button(title="Today", value="today")])
    context.set_buttons(
        [
            Button(title="Tomorrow", value="tomorrow", ref="session.cards.selected_card_id"),
            Button(title="Later", value="later"),
        ]
    )
    return ToolResult()


HOOKS: dict[str, Tool] = {
    tool_.name: tool_
    for tool_ in (
        run_after_setting_selected_card_id,
        run_after_setting_card_list,
        run_after_setting_color,
        delivery_windows,
    )
}


async def setup() -> tuple[ProjectEngine, TurnChannel]:
    CALLS.clear()
    project = project_with(HOOKS, schema=sample_schema())
    engine = engine_for(project, script_of({"turns": [{"say": "x"}]}))
    await open_call(engine)
    return engine, TurnChannel("t1")


def value(engine: ProjectEngine, namespace: str, entry: str) -> Any:
    return engine.session("c1").memory.value(FieldRef(namespace, entry))


async def test_a_successful_hook_keeps_the_write_and_hook_writes_do_not_retrigger() -> None:
    engine, channel = await setup()
    error = await PostWriteHooks(engine.session("c1"), channel).write(
        "cards", "selected_card_id", "c-7"
    )
    assert error is None
    assert value(engine, "cards", "selected_card_id") == "c-7"
    assert value(engine, "cards", "card_list") == ["c-7"]
    assert CALLS == ["selected_card_id"]  # card_list's hook did not run


async def test_a_hook_error_rolls_the_triggering_write_back() -> None:
    engine, channel = await setup()
    hooks = PostWriteHooks(engine.session("c1"), channel)
    assert await hooks.write("cards", "selected_card_id", "c-1") is None
    error = await hooks.write("cards", "selected_card_id", "unknown")
    assert error == "No card matches that label."
    assert value(engine, "cards", "selected_card_id") == "c-1"
    writes = []
    while not channel.queue.empty():
        event = channel.queue.get_nowait()
        if isinstance(event, MemorySet) and event.name == "cards.selected_card_id":
            writes.append(event.value)
    assert writes == ["c-1", "unknown", "c-1"]  # the rollback is a write too


async def test_a_crashing_hook_is_an_error_and_rolls_back() -> None:
    engine, channel = await setup()
    error = await PostWriteHooks(engine.session("c1"), channel).write("cards", "color", "red")
    assert error is not None
    assert "hook crashed" in error
    assert value(engine, "cards", "color") is None


async def test_hooks_leave_an_already_set_project_field_alone() -> None:
    engine, channel = await setup()
    engine.session("c1").memory.write(FieldRef("project", "customer_id"), "C-original")
    error = await PostWriteHooks(engine.session("c1"), channel).write(
        "cards", "selected_card_id", "c-2"
    )
    assert error is None  # no ProjectMemoryAlreadySetError
    assert value(engine, "project", "customer_id") == "C-original"


async def test_a_field_without_a_hook_is_just_written() -> None:
    engine, channel = await setup()
    hooks = PostWriteHooks(engine.session("c1"), channel)
    assert await hooks.write("cards", "pin_attempts", 1) is None
    assert CALLS == []


async def test_an_undeclared_field_cannot_be_written() -> None:
    engine, channel = await setup()
    with pytest.raises(EngineError, match="not declared"):
        await PostWriteHooks(engine.session("c1"), channel).write("cards", "nope", 1)


async def test_a_button_source_offers_the_last_buttons_it_set() -> None:
    engine, channel = await setup()
    buttons = await run_button_source(engine.session("c1"), channel, "cards", "delivery_windows")
    expected = (
        Button(title="Tomorrow", value="tomorrow", ref="session.cards.selected_card_id"),
        Button(title="Later", value="later"),
    )
    assert buttons == expected
    assert channel.queue.get_nowait() == Buttons("t1", expected)


async def test_buttons_are_dropped_once_the_turn_is_cancelled() -> None:
    engine, channel = await setup()
    channel.cancel()
    await run_button_source(engine.session("c1"), channel, "cards", "delivery_windows")
    assert channel.queue.empty()


async def test_an_unknown_button_source_is_an_engine_error() -> None:
    engine, channel = await setup()
    with pytest.raises(EngineError, match="no tool"):
        await run_button_source(engine.session("c1"), channel, "cards", "missing")

"""Contract defects of issue 17 fixed in the execution loop: HOOK-CAN-01, BTN-01, BTN-05 and
number coercion on writes, each on a small project written as a third-party author would."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.loop.loop_kit import (
    TOOL_HEADER,
    Chat,
    buttons,
    finished,
    said,
    skill_md,
    started,
    write_project,
)
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.store import InMemoryStore
from voicegate.engine.seam import (
    ButtonPress,
    MemorySet,
    Transcript,
    TurnEnded,
    TurnEvent,
    UserInput,
)
from voicegate.engine.tools.isolation import ToolLoops

ROOT = Path(__file__).resolve().parents[2]
PAYEE_DESK = ROOT / "tests" / "project" / "published" / "payee_desk"

HANGING_HOOK = {
    "skills/budget/skill.md": skill_md("", "Ask for the monthly budget.\n", name="Budget"),
    "skills/budget/memory.yml": (
        "schema:\n  public:\n    amount: {type: int, llm_settable: true}\n"
    ),
    "skills/budget/tools.py": TOOL_HEADER
    + (
        '@tool(description="Check the budget with a slow backend")\n'
        "async def run_after_setting_amount(context: ToolContext = None) -> ToolResult:\n"
        "    await asyncio.Event().wait()\n"
        '    return ToolResult(llm_response={"error": None})\n'
    ),
}


async def barge_in_after_write(chat: Chat, user: UserInput, field: str) -> list[TurnEvent]:
    """Run a turn and cancel it as soon as ``field`` was written (its hook then awaits)."""
    stream = chat.engine.turn("c1", user)
    received: list[TurnEvent] = []
    written = asyncio.Event()

    async def consume() -> None:
        async with stream:
            async for event in stream:
                received.append(event)
                if isinstance(event, MemorySet) and event.name == field:
                    written.set()

    task = asyncio.create_task(consume())
    await written.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return received + list(stream.undelivered())


@pytest.fixture(params=["engine-loop", "tool-loop-thread"])
def isolated(request: pytest.FixtureRequest) -> Iterator[ToolLoops | None]:
    """Hooks run on the caller's loop, or on a tool loop thread as under serve and chat."""
    if request.param == "engine-loop":
        yield None
        return
    loops = ToolLoops()
    yield loops
    loops.close()


async def test_hook_can_01_a_cancelled_post_write_hook_rolls_the_write_back(
    tmp_path: Path, isolated: ToolLoops | None
) -> None:
    turns = [
        {
            "steps": [
                {"calls": [{"activate": {"flow_id": "budget"}}]},
                {"calls": [{"set_fields": {"amount": 500}}]},
            ]
        }
    ]
    chat = Chat(write_project(tmp_path, HANGING_HOOK), turns)
    if isolated is not None:
        chat.engine = ProjectEngine(
            chat.project, lambda call_id: chat.model, InMemoryStore(), tool_loops=isolated
        )
    await chat.open()
    events = await barge_in_after_write(chat, Transcript("my budget is 500"), "budget.amount")
    assert events[-1] == TurnEnded("t1", "cancelled")
    writes = [(e.name, e.value) for e in events if isinstance(e, MemorySet)]
    assert writes == [("budget.amount", 500), ("budget.amount", None)]  # written, rolled back
    assert chat.memory("budget.amount") is None


async def test_hook_can_01_a_cancelled_hook_behind_a_set_button_rolls_back_too(
    tmp_path: Path,
) -> None:
    turns = [{"calls": [{"activate": {"flow_id": "budget"}}]}, {"say": "Noted."}]
    chat = await Chat(write_project(tmp_path, HANGING_HOOK), turns).open()
    await chat.send("budget please")
    tap = ButtonPress("set:session.budget.amount=40", "40")
    events = await barge_in_after_write(chat, tap, "budget.amount")
    assert events[-1].turn_id == "t2"
    assert [e.value for e in events if isinstance(e, MemorySet)] == [40, None]
    assert chat.memory("budget.amount") is None


async def test_btn_01_the_model_cannot_call_a_button_source_by_name() -> None:
    turns = [
        {
            "steps": [
                {"calls": [{"activate": {"flow_id": "send_money"}}]},
                {"calls": [{"account_buttons": {}}]},
                {"say": "Which account?"},
            ]
        }
    ]
    chat = await Chat(PAYEE_DESK, turns).open()
    events = await chat.send("send money")
    assert "account_buttons" not in chat.tools(1)  # hidden
    assert finished(events) == [("account_buttons", "error")]  # and refused when named
    assert buttons(events) == []  # its set_buttons never ran
    [result] = chat.results("account_buttons")
    assert "there is no tool 'account_buttons'" in result["error"]


PAYEE_TURN = {
    "steps": [
        {
            "calls": [
                {"activate": {"flow_id": "send_money"}},
                {"activate": {"flow_id": "send_money__transfer"}},
            ]
        },
        {
            "calls": [
                {"set_fields": {"payee_name": "Alice Smith"}},
                {"check_payee_exists": {"payee_name": "Alice Smith"}},
            ]
        },
        {"calls": [{"set_fields": {"amount": 50}}]},
    ]
}


async def test_btn_05_a_root_response_runs_its_button_source_as_the_delivering_skill() -> None:
    chat = await Chat(PAYEE_DESK, [PAYEE_TURN]).open()
    events = await chat.send("send fifty dollars to Alice Smith")
    assert started(events) == ["check_payee_exists"]
    assert buttons(events) == [["Everyday checking", "Rainy-day savings"]]


async def test_set_fields_stores_a_json_integer_in_a_float_field_as_a_float() -> None:
    chat = await Chat(PAYEE_DESK, [PAYEE_TURN]).open()
    events = await chat.send("send fifty dollars to Alice Smith")
    amount = chat.memory("send_money.amount")
    assert (amount, type(amount)) == (50.0, float)
    assert MemorySet("t1", "send_money.amount", 50.0) in events


NUMBERS = {
    "memory.yml": "limit:\n  type: float\n  initial_value: 100\n  mutable: true\n",
    "skills/count/skill.md": skill_md("", "Count things.\n", name="Count"),
    "skills/count/memory.yml": (
        "schema:\n  public:\n    items: {type: int}\n    price: {type: float}\n"
    ),
    "skills/count/tools.py": TOOL_HEADER
    + (
        '@tool(description="Store numbers the way a JSON backend returns them")\n'
        "async def store(context: ToolContext = None) -> ToolResult:\n"
        '    context.memory.set("items", 3.0)\n'
        '    context.memory.set("price", 7)\n'
        "    return ToolResult()\n"
    ),
}


async def test_tool_writes_and_initial_values_fit_numbers_to_the_declared_type(
    tmp_path: Path,
) -> None:
    turns = [{"calls": [{"activate": {"flow_id": "count"}}, "store"]}]
    chat = await Chat(write_project(tmp_path, NUMBERS), turns).open()
    assert chat.memory("project.limit") == 100.0
    assert isinstance(chat.memory("project.limit"), float)
    await chat.send("count")
    items, price = chat.memory("count.items"), chat.memory("count.price")
    assert (items, type(items), price, type(price)) == (3, int, 7.0, float)


CONFIRMED = """tool_constraints:
  - submit_order:
      requires_confirmation:
        enabled: true
        utter_for_confirmation: utter_confirm
      on_success: utter_placed
"""
ORDERS = {
    "skills/orders/skill.md": skill_md(
        CONFIRMED,
        "Take the order and submit it with submit_order, or run @block.checkout.\n\n"
        ":::ordered_block id=checkout\nsteps:\n  - id: submit\n    execute_tool: submit_order\n"
        "  - id: END\n:::\n",
        name="Orders",
    ),
    "skills/orders/memory.yml": "schema:\n  public:\n    attempts: {type: int}\n",
    "skills/orders/responses.yml": (
        "responses:\n"
        "  utter_confirm:\n    - text: Shall I send it?\n"
        "  utter_placed:\n    - text: It is sent.\n"
    ),
    "skills/orders/tools.py": TOOL_HEADER
    + (
        '@tool(description="Submit the order to a backend that hangs the first time")\n'
        "async def submit_order(context: ToolContext = None) -> ToolResult:\n"
        '    attempts = (context.memory.get("attempts") or 0) + 1\n'
        '    context.memory.set("attempts", attempts)\n'
        "    if attempts == 1:\n"
        "        await asyncio.Event().wait()\n"
        '    return ToolResult(llm_response={"sent": True})\n'
    ),
}
APPROVE = {"calls": [{"resolve_tool_confirmation": {"confirmed": True}}]}


@pytest.mark.parametrize(
    "first_turn",
    [
        {"calls": [{"activate": {"flow_id": "orders"}}, "submit_order"]},  # the model's call
        {  # an execute_tool step
            "calls": [
                {"activate": {"flow_id": "orders"}},
                {"activate": {"flow_id": "orders__checkout"}},
            ]
        },
    ],
    ids=["model-call", "execute-tool-step"],
)
async def test_conf_can_an_interrupted_approved_call_awaits_the_callers_answer_again(
    tmp_path: Path, first_turn: dict[str, object]
) -> None:
    turns = [first_turn, APPROVE, {"steps": [APPROVE, {"say": "Anything else?"}]}]
    chat = await Chat(write_project(tmp_path, ORDERS), turns).open()
    asked = await chat.send("send my order")
    assert said(asked) == ["Shall I send it?"]
    events = await barge_in_after_write(chat, Transcript("yes"), "orders.attempts")
    assert events[-1] == TurnEnded("t2", "cancelled")
    pending = chat.session.dialogue.pending
    assert pending is not None
    assert pending.tool == "submit_order"  # the approval is not kept, the call is
    again = await chat.send("yes, go ahead")
    assert "Shall I send it?" not in said(again)  # not asked again: this answer decides
    assert started(again) == ["submit_order"]
    assert "It is sent." in said(again)
    assert chat.memory("orders.attempts") == 2
    assert chat.session.dialogue.pending is None

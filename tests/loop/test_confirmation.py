"""Tool dispatch (contract §7.5): requires re-checked at dispatch, the confirmation pause and its
resume, on_success / on_failure, the tool list while a confirmation is pending."""

from pathlib import Path
from typing import Any

from tests.loop.loop_kit import TOOL_HEADER, Chat, said, skill_md, started, write_project
from voicegate.engine.seam import ToolStarted

FRONT = """tool_constraints:
  - place_order:
      requires: session.orders.quantity
      requires_confirmation:
        enabled: true
        utter_for_confirmation: utter_confirm_order
        utter_on_user_denial: utter_order_dropped
      on_success: utter_order_placed
      on_failure: utter_order_failed
  - refund:
      requires_confirmation:
        enabled: true
"""
ORDERS = {
    "skills/orders/skill.md": skill_md(
        FRONT,
        "Ask how many bags of beans the customer wants, then order them with place_order.\n",
        name="Orders",
        description="Order bags of coffee beans.",
    ),
    "skills/orders/memory.yml": (
        "schema:\n  public:\n"
        "    quantity: {type: int, llm_settable: true, description: Bags to order.}\n"
        "    order_id: {type: text}\n"
    ),
    "skills/orders/responses.yml": (
        "responses:\n"
        "  utter_confirm_order:\n    - text: Shall I order {quantity} bags?\n"
        "  utter_order_dropped:\n    - text: Okay, I won't order anything.\n"
        "  utter_order_placed:\n    - text: Order {order_id} is placed.\n"
        "  utter_order_failed:\n    - text: Sorry, the order did not go through.\n"
    ),
    "skills/orders/tools.py": TOOL_HEADER
    + (
        '@tool(description="Place the order")\n'
        "async def place_order(quantity: int, context: ToolContext = None) -> ToolResult:\n"
        "    if quantity > 10:\n"
        '        return ToolResult(llm_response={"error": "at most 10 bags"})\n'
        '    context.memory.set("order_id", f"O-{quantity}")\n'
        '    return ToolResult(llm_response={"ordered": quantity})\n\n\n'
        '@tool(description="Refund an order")\n'
        "async def refund(order_id: str) -> ToolResult:\n"
        '    return ToolResult(llm_response={"refunded": order_id})\n'
    ),
}
START = {"activate": {"flow_id": "orders"}}


def order(quantity: int) -> dict[str, Any]:
    """One turn: record the quantity, then ask to order it."""
    return {
        "calls": [
            START,
            {"set_fields": {"quantity": quantity}},
            {"place_order": {"quantity": quantity}},
        ]
    }


def answer(confirmed: bool, then: str = "") -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"calls": [{"resolve_tool_confirmation": {"confirmed": confirmed}}]}
    ]
    return {"steps": steps + ([{"say": then}] if then else [])}


async def orders(tmp_path: Path, *turns: dict[str, Any]) -> Chat:
    return await Chat(write_project(tmp_path, ORDERS), list(turns)).open()


async def test_requires_is_checked_again_at_dispatch_and_the_function_is_not_called(
    tmp_path: Path,
) -> None:
    early = {"steps": [{"calls": [START, {"place_order": {"quantity": 2}}]}, {"say": "Hm."}]}
    chat = await orders(tmp_path, early)
    await chat.send("order some beans")
    assert "place_order" not in chat.tools()  # hidden from the schema while the gate is shut
    (refused,) = chat.results("place_order")
    assert refused == {
        "error": "tool 'place_order' is not available now: its condition "
        "'session.orders.quantity' does not hold"
    }
    assert chat.memory("orders.order_id") is None


async def test_an_approved_confirmation_runs_the_call_and_speaks_on_success(tmp_path: Path) -> None:
    chat = await orders(tmp_path, order(2), answer(True))
    asked = await chat.send("two bags please")
    assert said(asked) == ["Shall I order 2 bags?"]
    assert started(asked) == []  # held, not run
    assert chat.results("place_order") == [
        {"status": "awaiting_confirmation", "tool": "place_order"}
    ]
    placed = await chat.send("yes")
    pending_tools = chat.tools(-2)  # the call that read the answer
    assert "resolve_tool_confirmation" in pending_tools
    assert "listen" not in pending_tools
    assert "### Pending confirmation\nThe call place_order(quantity=2)" in chat.prompt(-2)
    run = next(event for event in placed if isinstance(event, ToolStarted))
    assert (run.name, run.arguments) == ("place_order", {"quantity": 2})
    assert run.call_id.endswith("-confirmed")
    assert said(placed) == ["Order O-2 is placed."]
    assert chat.results("resolve_tool_confirmation") == [
        {"confirmed": True, "result": {"ordered": 2}}
    ]
    assert chat.session.dialogue.pending is None


async def test_a_denied_confirmation_drops_the_call_and_speaks_the_denial(tmp_path: Path) -> None:
    chat = await orders(tmp_path, order(2), answer(False, "never said: the engine waits"))
    await chat.send("two bags please")
    denied = await chat.send("no, don't")
    assert said(denied) == ["Okay, I won't order anything."]
    assert started(denied) == []
    assert chat.memory("orders.order_id") is None
    assert chat.results("resolve_tool_confirmation") == [
        {"confirmed": False, "cancelled": "place_order"}
    ]


async def test_a_failed_call_speaks_on_failure(tmp_path: Path) -> None:
    chat = await orders(tmp_path, order(50), answer(True))
    await chat.send("fifty bags")
    failed = await chat.send("yes")
    assert started(failed) == ["place_order"]
    assert said(failed) == ["Sorry, the order did not go through."]


async def test_without_named_responses_the_model_phrases_the_confirmation(tmp_path: Path) -> None:
    chat = await orders(
        tmp_path,
        {
            "steps": [
                {"calls": [START, {"refund": {"order_id": "O-1"}}]},
                {"calls": [{"refund": {"order_id": "O-1"}}]},
                {"say": "Do you want me to refund order O-1?"},
            ]
        },
        answer(False, "Fine, no refund."),
    )
    asked = await chat.send("refund O-1")
    assert said(asked) == ["Do you want me to refund order O-1?"]
    assert chat.results("refund") == [
        {"status": "awaiting_confirmation", "tool": "refund"},
        {"error": "a call of 'refund' is already waiting for approval"},
    ]
    assert said(await chat.send("no")) == ["Fine, no refund."]


REFUNDS = {
    "skills/refunds/skill.md": skill_md(
        "tool_constraints:\n  - issue_refund:\n      requires_confirmation:\n"
        "        enabled: true\n        utter_for_confirmation: utter_confirm_refund\n"
        "      on_success: utter_refunded\n",
        ":::ordered_block id=main\nsteps:\n  - id: refund\n    execute_tool: issue_refund\n"
        "  - id: END\n:::\n",
        name="Refunds",
    ),
    "skills/refunds/responses.yml": (
        "responses:\n  utter_confirm_refund:\n    - text: Refund your last order?\n"
        "  utter_refunded:\n    - text: The refund is on its way.\n"
    ),
    "skills/refunds/tools.py": TOOL_HEADER
    + (
        '@tool(description="Refund the last order")\n'
        "async def issue_refund() -> ToolResult:\n"
        '    return ToolResult(llm_response={"refunded": True})\n'
    ),
}


async def test_an_execute_tool_step_asks_for_confirmation_before_it_runs(tmp_path: Path) -> None:
    chat = await Chat(
        write_project(tmp_path, REFUNDS),
        [{"calls": [{"activate": {"flow_id": "refunds"}}]}, answer(True)],
    ).open()
    asked = await chat.send("I want a refund")
    assert said(asked) == ["Refund your last order?"]
    assert started(asked) == []
    done = await chat.send("yes")
    assert started(done) == ["issue_refund"]
    assert said(done) == [
        "The refund is on its way.",
        "Is there anything else I can help you with?",
    ]
    assert chat.results("resolve_tool_confirmation") == [{"confirmed": True}]

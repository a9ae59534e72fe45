"""Open questions of the contract (§11) that no other test pins, each on a small project.

docs/contract-decisions.md lists every question with voicegate's decision and its test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.loop.loop_kit import (
    TOOL_HEADER,
    Chat,
    finished,
    said,
    skill_md,
    spoken,
    started,
    write_project,
)
from voicegate.engine.llm.port import ToolResultMessage

HELPDESK = {
    "memory.yml": "ticket_count:\n  type: int\n  mutable: true\n  initial_value: 0\n",
    "skills/trip/skill.md": skill_md(
        "",
        "Help plan the trip with @block.book. If the caller needs a visa, use @skill.visa.\n\n"
        "Always mention the travel insurance.\n\n"
        ":::ordered_block id=book\nsteps:\n"
        "  - id: lookup\n    execute_tool: find_flights\n"
        "  - id: pick\n    instructions: Offer the flights and record the choice.\n"
        "    complete_when: session.trip.flight\n"
        "  - id: END\n:::\n",
        name="Trip",
    ),
    "skills/trip/memory.yml": (
        "schema:\n  public:\n"
        "    destination: {type: text, llm_settable: true}\n"
        "    flight: {type: text, llm_settable: true}\n"
    ),
    "skills/trip/tools.py": TOOL_HEADER
    + (
        '@tool(description="Find flights; tells the caller while it searches")\n'
        "async def find_flights(context: ToolContext = None) -> ToolResult:\n"
        '    await context.send("Searching flights now.")\n'
        '    return ToolResult(llm_response={"flights": ["NW12", "NW34"]})\n\n\n'
        '@tool(description="Book a hotel")\n'
        "async def book_hotel(city: str) -> ToolResult:\n"
        '    """Args:\n        city: this text is not used for the schema.\n    """\n'
        '    return ToolResult(llm_response={"hotel": city})\n'
    ),
    "skills/visa/skill.md": skill_md("", "Check the visa rules.\n", name="Visa"),
    "skills/visa/memory.yml": "schema:\n  public:\n    country: {type: text, llm_settable: true}\n",
}
START_TRIP = {"activate": {"flow_id": "trip"}}


async def helpdesk(tmp_path: Path, *turns: dict[str, Any]) -> Chat:
    return await Chat(write_project(tmp_path, HELPDESK), list(turns)).open()


async def test_q8_cancelling_a_delegated_child_resumes_the_parent_and_keeps_memory(
    tmp_path: Path,
) -> None:
    chat = await helpdesk(
        tmp_path,
        {"steps": [{"calls": [START_TRIP]}, {"say": "Where to?"}]},
        {
            "steps": [
                {"calls": [{"activate": {"flow_id": "visa"}}, {"set_fields": {"country": "JP"}}]},
                {"calls": ["cancel_skill"]},
                {"say": "Back to your trip."},
            ]
        },
    )
    await chat.send("plan a trip")
    await chat.send("do I need a visa for Japan? forget it")
    assert chat.stack == ["trip"]  # the parent resumed by itself; it was not cancelled
    assert chat.memory("visa.country") == "JP"  # cancel_skill clears nothing


async def test_q19_an_execute_tool_result_reaches_the_model_from_the_next_turn(
    tmp_path: Path,
) -> None:
    chat = await helpdesk(
        tmp_path,
        {"steps": [{"calls": [START_TRIP, {"activate": {"flow_id": "trip__book"}}]}]},
        {"say": "Which flight?"},
    )
    first = await chat.send("book me a flight")
    assert started(first) == ["find_flights"]
    await chat.send("what are my options?")
    results = [m for m in chat.model.requests[-1] if isinstance(m, ToolResultMessage)]
    assert [r.name for r in results][-1] == "find_flights"
    assert '"NW12"' in results[-1].content


async def test_q24_context_send_in_an_execute_tool_step_is_spoken(tmp_path: Path) -> None:
    chat = await helpdesk(
        tmp_path, {"steps": [{"calls": [START_TRIP, {"activate": {"flow_id": "trip__book"}}]}]}
    )
    events = await chat.send("book me a flight")
    assert spoken(events, "tool") == ["Searching flights now."]


async def test_q25_docstring_args_do_not_describe_parameters(tmp_path: Path) -> None:
    chat = await helpdesk(tmp_path, {"steps": [{"calls": [START_TRIP]}, {"say": "Sure."}]})
    await chat.send("plan a trip")
    spec = chat.tool_spec("book_hotel")
    assert spec.parameters["properties"]["city"] == {"type": "string"}


async def test_q29_a_hybrid_skills_visible_prose_stays_in_the_prompt_while_a_block_runs(
    tmp_path: Path,
) -> None:
    chat = await helpdesk(
        tmp_path,
        {"steps": [{"calls": [START_TRIP, {"activate": {"flow_id": "trip__book"}}]}, {"say": "?"}]},
    )
    await chat.send("book me a flight")
    prompt = chat.prompt()
    assert "Always mention the travel insurance." in prompt
    assert "Offer the flights and record the choice." in prompt


async def test_q22_calls_run_in_order_and_the_rest_of_a_batch_waits_once_the_turn_must(
    tmp_path: Path,
) -> None:
    files = {
        **HELPDESK,
        "skills/trip/skill.md": skill_md(
            "tool_constraints:\n  - book_hotel:\n      requires_confirmation:\n"
            "        enabled: true\n        utter_for_confirmation: utter_confirm_hotel\n",
            "Help plan the trip.\n",
            name="Trip",
        ),
        "skills/trip/responses.yml": (
            "responses:\n  utter_confirm_hotel:\n    - text: Shall I book it?\n"
        ),
    }
    batch = [START_TRIP, {"book_hotel": {"city": "Oslo"}}, {"set_fields": {"destination": "Oslo"}}]
    chat = await Chat(write_project(tmp_path, files), [{"calls": batch}]).open()
    events = await chat.send("book a hotel in Oslo and note Oslo")
    assert said(events) == ["Shall I book it?"]
    assert finished(events) == []  # the held call did not run
    assert chat.results("set_fields") == [{"error": "not run: the turn is waiting for the user"}]
    assert chat.memory("trip.destination") is None


TRANSFERS = {
    "skills/pay/skill.md": skill_md(
        "tool_constraints:\n"
        "  - send:\n"
        "      requires: session.pay.ready\n"
        "      requires_confirmation:\n        enabled: true\n"
        "        utter_for_confirmation: utter_sure\n"
        "  - audit:\n      on_failure: utter_audit_failed\n",
        "Pay the bill with send, or run @block.checks.\n\n"
        ":::ordered_block id=checks\nsteps:\n"
        "  - id: audit\n    execute_tool: audit\n"
        "  - id: after\n    action: utter_after\n"
        "  - id: END\n:::\n",
        name="Pay",
    ),
    "skills/pay/memory.yml": "schema:\n  public:\n    ready: {type: bool, llm_settable: true}\n",
    "skills/pay/responses.yml": (
        "responses:\n"
        "  utter_sure:\n    - text: Sure to pay?\n"
        "  utter_audit_failed:\n    - text: The audit failed.\n"
        "  utter_after:\n    - text: Moving on.\n"
    ),
    "skills/pay/tools.py": TOOL_HEADER
    + (
        '@tool(description="Pay")\n'
        "async def send() -> ToolResult:\n"
        '    return ToolResult(llm_response={"paid": True})\n\n\n'
        '@tool(description="Audit, against a backend that is down")\n'
        "async def audit() -> ToolResult:\n"
        '    raise RuntimeError("backend down")\n'
    ),
}
START_PAY = {"activate": {"flow_id": "pay"}}


async def test_q23_requires_is_checked_again_when_the_approved_call_finally_runs(
    tmp_path: Path,
) -> None:
    turns = [
        {"calls": [START_PAY, {"set_fields": {"ready": True}}, "send"]},
        {
            "steps": [
                {"calls": [{"set_fields": {"ready": False}}]},
                {"calls": [{"resolve_tool_confirmation": {"confirmed": True}}]},
                {"say": "It cannot go through now."},
            ]
        },
    ]
    chat = await Chat(write_project(tmp_path, TRANSFERS), turns).open()
    assert said(await chat.send("pay it")) == ["Sure to pay?"]
    answered = await chat.send("yes, but wait, not ready")
    assert started(answered) == []
    assert chat.results("resolve_tool_confirmation") == [
        {"error": "'send' may no longer be called; nothing was done"}
    ]


async def test_q20_an_execute_tool_step_whose_tool_raises_fails_and_the_block_goes_on(
    tmp_path: Path,
) -> None:
    turns = [{"calls": [START_PAY, {"activate": {"flow_id": "pay__checks"}}]}]
    chat = await Chat(write_project(tmp_path, TRANSFERS), turns).open()
    events = await chat.send("run the checks")
    assert finished(events) == [("audit", "error")]
    assert said(events)[:2] == ["The audit failed.", "Moving on."]  # on_failure, next step


async def test_activate_reads_the_319_argument_name_target_id(tmp_path: Path) -> None:
    chat = await helpdesk(tmp_path, {"steps": [{"calls": [{"activate": {"target_id": "trip"}}]}]})
    await chat.send("plan a trip")
    assert chat.stack == ["trip"]
    assert chat.results("activate") == [{"activated": "trip"}]

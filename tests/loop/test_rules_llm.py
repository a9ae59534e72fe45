"""The ``rules`` orchestrator: offline routing, typed filling, tool calls, responses."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.loop.loop_kit import ADA_PHONE, CARD_SERVICES, ROOT, Chat, said, started, write_project
from tests.loop.test_confirmation import ORDERS
from voicegate.engine.llm.rules import RulesLLM
from voicegate.engine.llm.rules.extract import enum_value, free_text, identifier, number, yes_or_no
from voicegate.engine.llm.rules.routing import best_flow
from voicegate.engine.project.loader import load_project


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yes please", True),
        ("Yeah, go ahead.", True),
        ("no problem, do it", True),
        ("no, don't", False),
        ("never mind", False),
        ("what time is it?", None),
        ("yes... no", None),
    ],
)
def test_yes_or_no(text: str, expected: bool | None) -> None:
    assert yes_or_no(text) is expected


@pytest.mark.parametrize(
    ("text", "integer", "expected"),
    [
        ("two bags please", True, 2),
        ("twenty five of them", True, 25),
        ("thirty-one", True, 31),
        ("1,200 dollars", True, 1200),
        ("about 12.5 kilos", False, 12.5),
        ("12.5 kilos", True, None),
        ("none", True, None),
    ],
)
def test_numbers_in_digits_or_words(text: str, integer: bool, expected: float | None) -> None:
    assert number(text, integer) == expected


def test_enumerated_values_identifiers_and_free_text() -> None:
    reasons = ["lost", "stolen", "damaged", "not_received"]
    assert enum_value("my card was Stolen yesterday", reasons) == "stolen"
    assert enum_value("it was not received at all", reasons) == "not_received"
    assert enum_value("I lose cards all the time", reasons) is None
    assert identifier("the balance of A-17 please") == "A-17"
    assert identifier("born 1990-04-01.") == "1990-04-01"
    assert identifier("my checking account") is None
    assert free_text("It's Japan.") == "Japan"
    assert free_text("my name is Ada Lovelace") == "Ada Lovelace"


def test_routing_by_lexical_similarity_to_descriptions() -> None:
    flows = [
        ("card_replace", "Replace a credit card that is lost, stolen or damaged."),
        ("travel_notice", "Register a travel notice so card payments abroad work."),
        ("check_balance", "Tell the customer the balance of one of their accounts."),
    ]
    assert best_flow("my card was stolen", flows)[0] == "card_replace"  # type: ignore[index]
    assert best_flow("I'm travelling to Japan", flows)[0] == "travel_notice"  # type: ignore[index]
    assert best_flow("what's my balance?", flows)[0] == "check_balance"  # type: ignore[index]
    assert best_flow("hello there", flows) is None


def chat_lines(project: Path, lines: list[str]) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "voicegate", "chat", str(project), "--llm", "rules"]
    result = subprocess.run(
        [*command, "--json", "--memory", "memory"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_the_demo_completes_its_main_task_from_typed_lines() -> None:
    events = chat_lines(ROOT / "config" / "agent", ["check my balance", "A-17", "no thanks, bye"])
    turns: dict[str, list[str]] = {}
    for event in events:
        if event["event"] == "say":
            turns.setdefault(event["turn_id"], []).append(event["text"])
    assert turns["t1"] == [
        "Which account should I look at?",
        "Your account number looks like A-17.",
    ]
    assert turns["t2"] == [
        "One moment while I look that up.",
        "Your balance is 1250.75 dollars.",
        "Anything else?",
    ]
    assert turns["t3"] == ["Thank you for calling Example Bank.", "Goodbye!"]
    finished = [e for e in events if e["event"] == "tool_finished"]
    assert [(e["name"], e["result"]) for e in finished] == [
        ("check_balance", {"balance": 1250.75, "currency": "USD"})
    ]
    assert [e["reason"] for e in events if e["event"] == "turn_ended"] == ["completed"] * 3


def test_the_demo_blocks_a_lost_card_through_its_ordered_block_and_confirmation() -> None:
    lines = ["I lost my credit card", "4321", "yes"]
    events = chat_lines(ROOT / "config" / "agent", lines)
    said = [(e["turn_id"], e["text"]) for e in events if e["event"] == "say"]
    assert ("t1", "What are the last four digits of the card?") in said
    assert ("t2", "Shall I block the card ending in 4321?") in said
    assert ("t3", "The card is blocked.") in said  # the tool's on_success response
    finished = [(e["turn_id"], e["name"]) for e in events if e["event"] == "tool_finished"]
    assert finished == [("t3", "block_card"), ("t3", "send_sms_confirmation")]
    buttons = [e for e in events if e["event"] == "buttons"]
    assert [b["title"] for b in buttons[0]["buttons"]] == ["Yes, block it", "No"]


async def rules_chat(project: Path, **metadata: Any) -> Chat:
    loaded = load_project(project)
    return await Chat(loaded, [], llm=RulesLLM(loaded.responses), **metadata).open()


async def test_rules_verify_a_caller_route_fill_an_enum_and_enter_a_block() -> None:
    chat = await rules_chat(CARD_SERVICES, caller_phone=ADA_PHONE)
    assert said(await chat.send("I need help with a card")) == [
        "Before we look at your cards, I need to confirm it's you.",
        "What is your date of birth?",
    ]
    verified = await chat.send("it's 1990-04-01")
    assert started(verified) == ["verify_identity"]
    assert chat.memory("project.authenticated") is True
    stolen = await chat.send("my card was stolen")
    # routed to card_replace, the reason read as an enum value, then the block the prose names
    assert chat.memory("card_replace.replacement_reason") == "stolen"
    assert started(stolen) == ["get_customer_info", "list_cards"]
    assert said(stolen)[-1] == "Which card needs replacing?"
    await chat.send("card-2")
    assert chat.memory("card_replace.selected_card_id") == "card-2"


async def test_rules_fill_a_number_and_answer_a_confirmation(tmp_path: Path) -> None:
    chat = await rules_chat(write_project(tmp_path, ORDERS))
    asked = await chat.send("I'd like to order two bags of beans")
    assert chat.memory("orders.quantity") == 2
    assert said(asked) == ["Shall I order 2 bags?"]
    placed = await chat.send("yes please")
    assert started(placed) == ["place_order"]
    # the tool succeeded and nothing is left to do: the rules finish the skill
    assert said(placed) == ["Order O-2 is placed.", "Is there anything else I can help you with?"]


async def test_rules_greet_decline_and_ask_for_a_missing_argument(tmp_path: Path) -> None:
    chat = await rules_chat(write_project(tmp_path, ORDERS))
    assert said(await chat.send("hello")) == ["Hello!", "How can I help you?"]
    assert said(await chat.send("what's the weather like?")) == ["Sorry, I can't help with that."]
    asked = await chat.send("I want to order coffee beans")
    assert said(asked) == ["What is the quantity?"]
    assert started(asked) == []

"""The scripted model: format, matching, multi-step turns and pending steps."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.engine.engine_kit import script_of
from voicegate.engine.llm.port import (
    AssistantMessage,
    Message,
    TextDelta,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from voicegate.engine.llm.script import load_script, parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.yamlfile import parse_yaml
from voicegate.errors import ConfigError, LLMError

SCRIPT = {
    "turns": [
        {"user": "Hello!", "say": "Hi. How can I help?"},
        {
            "user_matches": "balance",
            "steps": [
                {"say": "One moment.", "calls": [{"check_balance": {"account_id": "A-1"}}]},
                {"say": "You have {check_balance.balance} {check_balance.currency}."},
            ],
        },
    ]
}


async def step(llm: ScriptedLLM, messages: list[Message]) -> tuple[str, list[ToolCall]]:
    text, calls = "", []
    async for item in llm.stream(messages, []):
        if isinstance(item, TextDelta):
            text += item.text
        else:
            calls.append(item)
    return text, calls


def answered(call: ToolCall, result: Any) -> list[Message]:

    return [
        AssistantMessage("", (call,)),
        ToolResultMessage(call.call_id, call.name, json.dumps(result)),
    ]


async def test_turns_play_in_order_with_tool_results_filled_in() -> None:
    llm = ScriptedLLM(script_of(SCRIPT))
    history: list[Message] = [UserMessage("hello")]
    assert await step(llm, history) == ("Hi. How can I help?", [])
    history += [AssistantMessage("Hi. How can I help?"), UserMessage("my balance please")]
    text, calls = await step(llm, history)
    assert text == "One moment."
    assert calls == [ToolCall("call-2-1-1", "check_balance", {"account_id": "A-1"})]
    history += answered(calls[0], {"balance": 12.5, "currency": "USD"})
    assert await step(llm, history) == ("You have 12.5 USD.", [])
    assert llm.finished


async def test_after_the_last_step_the_model_has_nothing_more_to_say() -> None:
    llm = ScriptedLLM(script_of({"turns": [{"calls": ["ping"]}]}))
    _, calls = await step(llm, [UserMessage("go")])
    assert await step(llm, [UserMessage("go"), *answered(calls[0], "pong")]) == ("", [])


async def test_a_step_whose_calls_got_no_result_is_served_again() -> None:
    llm = ScriptedLLM(script_of(SCRIPT))
    await step(llm, [UserMessage("hello")])
    _, first = await step(llm, [UserMessage("hello"), UserMessage("balance")])
    # the turn was cancelled: no result came back; the user speaks again
    text, again = await step(
        llm, [UserMessage("hello"), UserMessage("balance"), UserMessage("hm?")]
    )
    assert again == first
    assert text == "One moment."


async def test_only_the_unanswered_calls_of_a_step_are_served_again() -> None:
    script = script_of({"turns": [{"calls": ["first", "second"]}, {"say": "next"}]})
    llm = ScriptedLLM(script)
    _, calls = await step(llm, [UserMessage("go")])
    assert [call.name for call in calls] == ["first", "second"]
    history = [UserMessage("go"), *answered(calls[0], "done"), UserMessage("again")]
    _, again = await step(llm, history)
    assert again == [calls[1]]


async def test_a_step_after_completed_calls_stays_pending_into_the_next_turn() -> None:
    llm = ScriptedLLM(script_of(SCRIPT))
    await step(llm, [UserMessage("hello")])
    _, calls = await step(llm, [UserMessage("balance")])
    history = [UserMessage("balance"), *answered(calls[0], {"balance": 3}), UserMessage("well?")]
    text, _ = await step(llm, history)  # cancelled before the model spoke: the next turn does
    assert text == "You have 3 {check_balance.currency}."


async def test_a_turn_that_does_not_match_the_user_input_is_an_error() -> None:
    llm = ScriptedLLM(script_of(SCRIPT))
    with pytest.raises(LLMError, match=r"turn 1 expects user: 'Hello!'.*'goodbye'"):
        await step(llm, [UserMessage("goodbye")])


async def test_running_out_of_script_is_an_error() -> None:
    llm = ScriptedLLM(script_of({"turns": [{"say": "Only turn."}]}))
    await step(llm, [UserMessage("one")])
    with pytest.raises(LLMError, match="no turn left"):
        await step(llm, [UserMessage("one"), UserMessage("two")])


@pytest.mark.parametrize(
    ("user", "pattern", "text", "matches"),
    [
        ("Hello", None, "  hello!  ", True),
        ("Hello", None, "hello there", False),
        (None, r"\bA-\d+", "account a-17 please", True),
        (None, r"^yes$", "yes please", False),
        (None, None, "anything", True),
    ],
)
def test_user_matching(user: str | None, pattern: str | None, text: str, matches: bool) -> None:
    turn: dict[str, Any] = {"say": "ok"}
    if user is not None:
        turn["user"] = user
    if pattern is not None:
        turn["user_matches"] = pattern
    assert script_of({"turns": [turn]}).turns[0].matches(text) is matches


def test_call_forms() -> None:
    script = script_of({"turns": [{"calls": ["bare", {"with_args": {"a": 1}}, {"nulls": None}]}]})
    calls = script.turns[0].steps[0].calls
    assert [(call.name, dict(call.arguments)) for call in calls] == [
        ("bare", {}),
        ("with_args", {"a": 1}),
        ("nulls", {}),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- say: hi\n", "a mapping with a 'turns:' list"),
        ("turns:\n  - sya: hi\n", "unknown turn keys ['sya']"),
        ("turns:\n  - user: hi\n", "needs 'say:' text or 'calls:'"),
        ("turns:\n  - steps: []\n", "non-empty list"),
        ("turns:\n  - say: a\n    steps: [{say: b}]\n", "not both"),
        ("turns:\n  - steps:\n      - say: a\n      - say: b\n", "only the last step"),
        ("turns:\n  - calls: [{a: 1, b: 2}]\n", "single-key mapping"),
        ("turns:\n  - user_matches: '('\n    say: x\n", "not a valid regular expression"),
    ],
)
def test_malformed_scripts_name_the_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as raised:
        parse_script(parse_yaml(text, "s.yml"), "s.yml")
    assert str(raised.value).startswith("s.yml")


def test_load_script_reports_file_problems(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_script(tmp_path / "missing.yml")
    (tmp_path / "bad.yml").write_text("turns: [\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_script(tmp_path / "bad.yml")


def test_the_example_script_loads() -> None:
    example = Path(__file__).resolve().parents[2] / "examples/bank_balance/conversation.yml"
    assert len(load_script(example).turns) == 3

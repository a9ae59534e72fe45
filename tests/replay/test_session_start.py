"""A project that overrides ``default_session_start`` greets the caller when the call connects.

Contract §5.7: the bundled session-start skill says nothing; "to make the agent speak first,
override it and have the channel send ``/session_start``". On a phone call the gateway is
the channel and the session starts when the call connects. Before this, a voice call never
ran the override: the caller heard silence until they spoke (an outside project's greeting,
written to the contract, was never heard). A project without the override still waits for
the caller, as before.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.calls.call_kit import cue, gateway_for, script_of
from tests.calls.test_bargein_calls import BALANCE
from tests.replay.replay_kit import AUDIO
from voicegate.callers.conversationrelay import DEFAULT_CALL_SID, ConversationRelayCaller
from voicegate.callers.driver import drive
from voicegate.cli.replaying import run_scenario

GREETING = "Welcome to Clínica San José. How can I help?"

SESSION_START = """---
name: Session start
description: Greets the caller
routing:
  engine_managed: true
---
:::ordered_block id=main
steps:
  - id: look_up
    execute_tool: identify_caller
  - id: greet
    action: utter_greet
:::
"""

TOOLS = """from rasa.mantle.tools.decorator import ToolContext, tool
from rasa.mantle.tools.result import ToolResult


@tool(description="Recognise a returning caller")
async def identify_caller(context: ToolContext = None) -> ToolResult:
    return ToolResult(llm_response={"phone": context.memory.get("caller_phone")})
"""

HELP = """---
name: Help
description: Anything the caller asks
---
Help the caller.
"""


def write_project(root: Path, *, greets: bool, provider: str = "twilio") -> Path:
    """A small project; with ``greets`` it overrides default_session_start to greet."""
    (root / "skills" / "help").mkdir(parents=True)
    (root / "agent.yml").write_text("agent:\n  persona: A clinic assistant.\n", "utf-8")
    (root / "integrations.yml").write_text(
        "llm: {model_group: main}\nmodel_groups:\n"
        "  - {id: main, models: [{provider: openai, model: gpt-4.1-mini}]}\n",
        "utf-8",
    )
    (root / "memory.yml").write_text("caller_phone: {type: text, seed: true}\n", "utf-8")
    (root / "responses.yml").write_text(f"responses:\n  utter_greet:\n    - {GREETING}\n", "utf-8")
    (root / "skills" / "help" / "skill.md").write_text(HELP, "utf-8")
    (root / "conversation.yml").write_text("turns:\n  - say: Of course.\n", "utf-8")
    if greets:
        (root / "skills" / "default_session_start").mkdir()
        (root / "skills" / "default_session_start" / "skill.md").write_text(SESSION_START, "utf-8")
        (root / "skills" / "default_session_start" / "tools.py").write_text(TOOLS, "utf-8")
    scenario = root.parent / f"{root.name}.yml"
    scenario.write_text(
        f"provider: {provider}\n"
        f"project: {root.name}\n"
        "llm: conversation.yml\n"
        "parameters: {caller_phone: '+34600111222'}\n"
        "caller:\n"
        f"  - audio: {AUDIO / 'synth' / 'festival' / 'yes_8k.wav'}\n"
        "    at_ms: 4000\n"
        "    transcript: can you help me\n"
        "hang_up: {quiet_ms: 1500}\n"
        "max_ms: 20000\n",
        "utf-8",
    )
    return scenario


def turns(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(r["turn_id"], r["input"]["text"]) for r in records if r["event"] == "turn_started"]


def heard(records: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    return [(r["turn_id"], r["text"], r["interrupted"]) for r in records if r["event"] == "heard"]


@pytest.mark.parametrize("provider", ["twilio", "browser"])
def test_an_overridden_session_start_greets_before_the_caller_speaks(
    tmp_path: Path, provider: str
) -> None:
    scenario = write_project(tmp_path / "greets", greets=True, provider=provider)
    run = run_scenario(scenario, speed=math.inf, workdir=tmp_path / "run", virtual=True)
    assert turns(run.records) == [("t1", "/session_start"), ("t2", "can you help me")]
    assert heard(run.records) == [("t1", GREETING, False), ("t2", "Of course.", False)]
    tool = next(r for r in run.records if r["event"] == "tool_finished")
    # The seed from the call's parameters is there when the session-start skill runs.
    assert (tool["name"], tool["result"]) == ("identify_caller", {"phone": "+34600111222"})
    greeted = next(r["t_ms"] for r in run.records if r["event"] == "turn_ended")
    assert greeted < 4000  # before the caller's cue


def test_without_the_override_the_agent_waits_for_the_caller(tmp_path: Path) -> None:
    scenario = write_project(tmp_path / "waits", greets=False)
    run = run_scenario(scenario, speed=math.inf, workdir=tmp_path / "run", virtual=True)
    assert turns(run.records) == [("t1", "can you help me")]
    assert heard(run.records) == [("t1", "Of course.", False)]


async def test_a_conversationrelay_call_greets_too(tmp_path: Path) -> None:
    """ConversationRelay carries text: the greeting goes out as tokens before any prompt."""
    write_project(tmp_path / "greets", greets=True)
    async with gateway_for(tmp_path / "world", [], project=tmp_path / "greets") as world:
        caller = ConversationRelayCaller(script_of(cue(BALANCE, at_ms=4000), tail_ms=2000))
        url = world.url.removesuffix("/twilio") + "/conversationrelay"
        assert await drive(url, caller, speed=4.0, max_ms=30_000) == 1000
    timeline = world.runner.timeline(DEFAULT_CALL_SID)
    assert timeline is not None
    assert turns(list(timeline.records)) == [("t1", "/session_start"), ("t2", "check my balance")]
    sent = [r["token"] for r in caller.observed if r["event"] == "token_received"]
    assert sent[0] == "Welcome to Clínica San José. "

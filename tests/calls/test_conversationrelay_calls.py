"""Twilio ConversationRelay end to end: a real gateway on loopback, the emulated Twilio side.

The caller (callers/conversationrelay.py) hears the scripted recordings as Twilio would (their
speech found by webrtcvad), sends their transcripts as prompts, speaks the bot's tokens at its
own pace and interrupts the bot when the caller talks over it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from tests.calls.test_bargein_calls import BALANCE, INTERRUPTION, first
from tests.calls.test_call_ending import GOODBYE
from tests.calls.test_ingress_attacks import closed
from voicegate.callers.conversationrelay import DEFAULT_CALL_SID, ConversationRelayCaller
from voicegate.callers.driver import drive
from voicegate.callers.script import Cue

ANNOUNCEMENT = "Let me check that for you, this can take a moment."


def relay_url(world: CallWorld) -> str:
    return world.url.removesuffix("/twilio") + "/conversationrelay"


def records(world: CallWorld) -> list[dict[str, Any]]:
    timeline = world.runner.timeline(DEFAULT_CALL_SID)
    assert timeline is not None
    return list(timeline.records)


def tokens(caller: ConversationRelayCaller) -> list[str]:
    return [r["token"] for r in caller.observed if r["event"] == "token_received"]


async def test_an_interrupt_cancels_the_turn_and_heard_is_what_twilio_spoke(
    tmp_path: Path,
) -> None:
    barge: Cue = cue(INTERRUPTION, after_bot_speech=1, delay_ms=800)
    async with gateway_for(tmp_path, []) as world:
        # quiet_ms is media time: 2 s of real quiet at speed 4, longer than the tool takes.
        caller = ConversationRelayCaller(
            script_of(cue(BALANCE, at_ms=300), barge, tail_ms=2000), quiet_ms=8000
        )
        assert await drive(relay_url(world), caller, speed=4.0, max_ms=40_000) == 1000
    timeline = records(world)
    interrupt = next(r for r in caller.observed if r["event"] == "interrupt_sent")
    interruption = first(timeline, "interruption")
    # The interrupt cancelled turn t1 as a confirmed barge-in does, at once.
    assert first(timeline, "turn_cancelled")["turn_id"] == "t1"
    assert first(timeline, "flush_sent")["t_ms"] == interruption["t_ms"]
    assert first(timeline, "tool_cancelled", turn_id="t1")["name"] == "check_balance"
    assert [r["event"] for r in world.tool_record()] == [
        "started",
        "cancelled",
        "started",
        "finished",
    ]
    # The engine heard exactly what Twilio said it had spoken: a prefix of what t1 sent.
    heard = first(timeline, "heard", turn_id="t1")
    assert heard["interrupted"]
    assert heard["text"] == interrupt["heard"] == interruption["heard"]
    assert ("Sure. " + ANNOUNCEMENT).startswith(heard["text"])
    assert len(heard["text"]) < len("Sure. " + ANNOUNCEMENT)
    # Every sentence went out as a token as soon as it was said; each reply ends with last.
    said = [r["text"] for r in timeline if r["event"] == "say" and r["turn_id"] == "t2"]
    sent = tokens(caller)
    assert [s + " " for s in said] == sent[-len(said) - 1 : -1]
    assert sent[-1] == ""
    assert first(timeline, "heard", turn_id="t2") == {
        **first(timeline, "heard", turn_id="t2"),
        "text": " ".join(said),
        "interrupted": False,
    }


async def test_the_agent_ends_the_session_with_handoff_data(tmp_path: Path) -> None:
    async with gateway_for(
        tmp_path, [], project=GOODBYE, conversation="conversation_transfer.yml"
    ) as world:
        caller = ConversationRelayCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=30_000))
        assert await drive(relay_url(world), caller, speed=4.0, max_ms=60_000) == 1000
    assert caller.ended is not None
    handoff = json.loads(caller.ended["handoffData"])
    assert handoff["reasonCode"] == "live-agent-handoff"
    assert handoff["transferTo"] == "+15550100"
    # The goodbye went out (and was closed with last) before the end.
    events = [r["event"] for r in caller.observed]
    assert events.index("reply_ended") < events.index("end_received")
    timeline = records(world)
    ended = first(timeline, "call_ended_by_agent")
    assert (ended["action"], ended["via"]) == ("transfer", "end")


async def test_a_burst_of_prompts_is_closed_and_the_queued_turns_never_run(
    tmp_path: Path,
) -> None:
    """Each prompt waits for the turn before it: a burst is bounded, and nothing outlives it."""
    caller = ConversationRelayCaller(script_of(cue(BALANCE, at_ms=300)))
    prompt = {"type": "prompt", "voicePrompt": "check my balance", "lang": "en-US", "last": True}
    async with gateway_for(tmp_path, []) as world:
        async with connect(relay_url(world)) as socket:
            for message in caller.opening():
                await socket.send(message)
            for _ in range(50):
                await socket.send(json.dumps(prompt))
            code, reason = await closed(socket)
        assert (code, reason) == (1008, "more than 8 prompts wait for the bot to answer the first")
        for _ in range(500):  # the call, and every turn queued behind it, is gone at once
            if not world.gateway.calls.active:
                break
            await asyncio.sleep(0.01)
        assert not world.gateway.calls.active
    started = [r for r in records(world) if r["event"] == "turn_started"]
    assert len(started) <= 1  # the running turn at most; the queued ones were cancelled

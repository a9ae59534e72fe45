"""A broken peer ends only its own call; DTMF reaches the engine as user input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from websockets.asyncio.client import connect

from tests.calls.call_kit import cue, gateway_for, script_of
from voicegate.callers.driver import drive
from voicegate.callers.script import CallerScript
from voicegate.callers.twilio import TwilioCaller

BALANCE = "synth/festival/balance_8k.wav"
SID_666 = "MZ00000000000000000000000000000666"


async def test_a_malformed_message_closes_that_call_only(tmp_path: Path) -> None:
    async with gateway_for(tmp_path, ["check my balance"]) as world:
        # The tail leaves the turn's 1.5 s tool (3 s of media at speed 2) time to finish.
        healthy = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=6000))
        broken = TwilioCaller(
            CallerScript([], 8000),
            call_sid="CA00000000000000000000000000000666",
            stream_sid=SID_666,
        )

        async def break_protocol() -> tuple[int | None, str | None]:
            async with connect(world.url) as socket:
                for message in broken.opening():
                    await socket.send(message)
                for _ in range(10):
                    await socket.send(broken.tick()[-1])
                bad_media = {"event": "media", "streamSid": SID_666, "media": {"payload": "***"}}
                await socket.send(json.dumps(bad_media))
                await socket.wait_closed()
                return socket.close_code, socket.close_reason

        healthy_close, (broken_code, broken_reason) = await asyncio.gather(
            drive(world.url, healthy, speed=2.0, max_ms=20_000), break_protocol()
        )
    assert broken_code == 1002
    assert broken_reason is not None
    assert "base64" in broken_reason
    assert healthy_close == 1000
    timeline = world.runner.timeline("CA00000000000000000000000000000042")
    assert timeline is not None
    assert timeline.named("turn_ended")[0]["reason"] == "completed"
    broken_timeline = world.runner.timeline("CA00000000000000000000000000000666")
    assert broken_timeline is not None
    assert broken_timeline.named("protocol_error")


async def test_dtmf_starts_a_turn_with_the_digits(tmp_path: Path) -> None:
    async with gateway_for(tmp_path, []) as world:
        caller = TwilioCaller(CallerScript([], 8000, tail_ms=6000))
        pressed = False
        original_tick = caller.tick

        def tick_with_keypress() -> list[str]:
            nonlocal pressed
            messages = original_tick()
            if caller.now_ms >= 400 and not pressed:
                pressed = True
                dtmf = {
                    "event": "dtmf",
                    "streamSid": "MZ00000000000000000000000000000042",
                    "sequenceNumber": "999",
                    "dtmf": {"track": "inbound_track", "digit": "7"},
                }
                messages.append(json.dumps(dtmf))
            return messages

        caller.tick = tick_with_keypress  # type: ignore[method-assign]
        assert await drive(world.url, caller, speed=2.0, max_ms=20_000) == 1000
    timeline = world.runner.timeline("CA00000000000000000000000000000042")
    assert timeline is not None
    assert timeline.named("dtmf")[0]["digit"] == "7"
    assert timeline.named("turn_started")[0]["input"] == {"dtmf": "7"}
    assert timeline.named("tool_started")[0]["name"] == "check_balance"

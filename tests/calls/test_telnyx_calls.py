"""Barge-in end to end over Telnyx: a real gateway, the emulated Telnyx caller, real VAD.

The Telnyx dialect (providers.md §b.4) through the same session as Twilio: the flush is
Telnyx's ``clear``, marks come back as Telnyx mark callbacks, and what was heard is settled
by them (fixtures/projects/slow_bank, as tests/calls/test_bargein_calls.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from voicegate.callers.driver import drive
from voicegate.callers.telephone import FRAME_MS
from voicegate.callers.telnyx import TelnyxCaller

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
CALL_ID = "v3:telnyx-e2e-call"
ANNOUNCEMENT = "Let me check that for you, this can take a moment."
FRAME_BYTES = 160


def telnyx_url(world: CallWorld) -> str:
    """The gateway's Telnyx stream, next to the Twilio one the kit points at."""
    return world.url.removesuffix("/twilio") + "/telnyx"


def records(world: CallWorld) -> list[dict[str, Any]]:
    timeline = world.runner.timeline(CALL_ID)
    assert timeline is not None
    return list(timeline.records)


def first(timeline: list[dict[str, Any]], event: str, **match: Any) -> dict[str, Any]:
    return next(
        r for r in timeline if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    )


def bot_audio_between(caller: TelnyxCaller, start_ms: int, end_ms: int) -> bool:
    """Whether the caller heard any bot audio in [start_ms, end_ms)."""
    track = np.frombuffer(bytes(caller.bot_track), dtype=np.uint8)
    frames = track[: len(track) // FRAME_BYTES * FRAME_BYTES].reshape(-1, FRAME_BYTES)
    window = frames[start_ms // FRAME_MS : end_ms // FRAME_MS]
    return bool((window != 0xFF).any())


async def test_telnyx_caller_barging_in_gets_a_clear_and_only_what_was_heard(
    tmp_path: Path,
) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts) as world:
        script = script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400))
        caller = TelnyxCaller(script, call_control_id=CALL_ID, parameters={"tenant": "acme"})
        assert await drive(telnyx_url(world), caller, speed=2.0, max_ms=30_000) == 1000
    timeline = records(world)
    assert first(timeline, "call_started")["metadata"] == {"tenant": "acme"}
    interruption = first(timeline, "interruption")
    flush = first(timeline, "flush_sent")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    # The flush is Telnyx's own verb, sent with the interruption, and Telnyx got it.
    assert flush["verb"] == "clear"
    assert flush["t_ms"] == interruption["t_ms"]
    assert caller.clears
    # Mark callbacks decided what was heard: a strict prefix of what the turn queued.
    heard = first(timeline, "heard", turn_id="t1")
    spoken = "Sure. " + ANNOUNCEMENT
    assert heard["interrupted"]
    assert heard["text"]
    assert spoken.startswith(heard["text"])
    assert len(heard["text"]) < len(spoken)
    assert any(r["event"] == "mark_played" for r in timeline)
    # No audio of the interrupted turn reached the caller after the clear.
    clear_ms = caller.clears[0]
    assert bot_audio_between(caller, 0, clear_ms)
    assert not bot_audio_between(caller, clear_ms + FRAME_MS, second_turn["t_ms"])
    # The cancelled tool ran again next turn and finished.
    assert [r["event"] for r in world.tool_record()] == [
        "started",
        "cancelled",
        "started",
        "finished",
    ]
    assert first(timeline, "heard", turn_id="t2")["interrupted"] is False

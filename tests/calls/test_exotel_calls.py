"""Barge-in end to end over Exotel: a real gateway, the emulated Voicebot applet, real VAD.

The Exotel dialect (providers.md §b.6) through the same session as Twilio: caller audio in
100 ms media events, bot audio in chunks of at least 3.2 kB of whole 320-byte blocks (the
emulation refuses any other), the flush is Exotel's ``clear``, and what was heard is settled
by the marks Exotel answers (fixtures/projects/slow_bank).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from voicegate.callers.driver import drive
from voicegate.callers.exotel import ExotelCaller
from voicegate.callers.telephone import FRAME_MS

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
CALL_SID = "e7e0000000000000000000000000e2e0"
ANNOUNCEMENT = "Let me check that for you, this can take a moment."
FRAME_SAMPLES = 160  # 20 ms at 8 kHz


def exotel_url(world: CallWorld) -> str:
    """The gateway's Exotel stream, next to the Twilio one the kit points at."""
    return world.url.removesuffix("/twilio") + "/exotel"


def first(timeline: list[dict[str, Any]], event: str, **match: Any) -> dict[str, Any]:
    return next(
        r for r in timeline if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    )


def bot_audio_between(caller: ExotelCaller, start_ms: int, end_ms: int) -> bool:
    """Whether the caller heard any bot audio in [start_ms, end_ms)."""
    track = np.frombuffer(bytes(caller.bot_track), dtype="<i2")
    frames = track[: len(track) // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES)
    window = frames[start_ms // FRAME_MS : end_ms // FRAME_MS]
    return bool((window != 0).any())


async def test_exotel_caller_barging_in_gets_clear_and_only_what_was_heard(
    tmp_path: Path,
) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts) as world:
        script = script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400))
        caller = ExotelCaller(script, call_sid=CALL_SID, parameters={"tenant": "acme"})
        assert await drive(exotel_url(world), caller, speed=2.0, max_ms=30_000) == 1000
    timeline_of = world.runner.timeline(CALL_SID)
    assert timeline_of is not None
    timeline = list(timeline_of.records)
    metadata = first(timeline, "call_started")["metadata"]
    assert metadata["tenant"] == "acme"
    assert metadata["from"].startswith("+91")
    interruption = first(timeline, "interruption")
    flush = first(timeline, "flush_sent")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    # The flush is Exotel's own verb, sent with the interruption, and Exotel got it.
    assert flush["verb"] == "clear"
    assert flush["t_ms"] == interruption["t_ms"]
    assert caller.clears
    # Exotel's marks decided what was heard: a strict prefix of what the turn queued.
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
    assert [r["event"] for r in world.tool_record()] == [
        "started",
        "cancelled",
        "started",
        "finished",
    ]
    second = first(timeline, "heard", turn_id="t2")
    assert second["text"].endswith("Found it. Your balance is 42 dollars.")
    assert second["interrupted"] is False
    # The caller hung up with Exotel's stop.
    assert first(timeline, "call_ended")["reason"] == "exotel sent stop (callended)"

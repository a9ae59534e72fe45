"""Barge-in end to end over Jambonz: a real gateway, the emulated listen verb, real VAD.

The Jambonz dialect (providers.md §b.9) through the same session as Twilio: the socket speaks
``audio.jambonz.org``, audio is binary L16 both ways, the flush is ``killAudio``, and since
Jambonz has no playback acknowledgement what was heard comes from the playout clock and is
marked as an estimate (fixtures/projects/slow_bank).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from voicegate.callers.driver import drive
from voicegate.callers.jambonz import JambonzCaller
from voicegate.callers.telephone import FRAME_MS

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
CALL_SID = "1a2b0000-0000-4000-8000-00000000e2e0"
ANNOUNCEMENT = "Let me check that for you, this can take a moment."
FRAME_SAMPLES = 160  # 20 ms at 8 kHz


def jambonz_url(world: CallWorld) -> str:
    """The gateway's Jambonz stream, next to the Twilio one the kit points at."""
    return world.url.removesuffix("/twilio") + "/jambonz"


def first(timeline: list[dict[str, Any]], event: str, **match: Any) -> dict[str, Any]:
    return next(
        r for r in timeline if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    )


def bot_audio_between(caller: JambonzCaller, start_ms: int, end_ms: int) -> bool:
    """Whether the caller heard any bot audio in [start_ms, end_ms)."""
    track = np.frombuffer(bytes(caller.bot_track), dtype="<i2")
    frames = track[: len(track) // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES)
    window = frames[start_ms // FRAME_MS : end_ms // FRAME_MS]
    return bool((window != 0).any())


async def test_jambonz_caller_barging_in_gets_kill_audio_and_an_estimate_of_what_was_heard(
    tmp_path: Path,
) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts) as world:
        script = script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400))
        caller = JambonzCaller(script, call_sid=CALL_SID, parameters={"tenant": "acme"})
        url = jambonz_url(world)
        code = await drive(url, caller, speed=2.0, max_ms=30_000, subprotocols=caller.subprotocols)
        assert code == 1000
    timeline_of = world.runner.timeline(CALL_SID)
    assert timeline_of is not None
    timeline = list(timeline_of.records)
    metadata = first(timeline, "call_started")["metadata"]
    assert (metadata["tenant"], metadata["callSid"]) == ("acme", CALL_SID)
    interruption = first(timeline, "interruption")
    flush = first(timeline, "flush_sent")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    # The flush is Jambonz's own verb, sent with the interruption, and Jambonz got it.
    assert flush["verb"] == '{"type":"killAudio"}'
    assert flush["t_ms"] == interruption["t_ms"]
    assert caller.clears
    # No acknowledgements: the playout clock estimated what was heard, and says so.
    heard = first(timeline, "heard", turn_id="t1")
    spoken = "Sure. " + ANNOUNCEMENT
    assert heard["interrupted"]
    assert heard["estimated"]
    assert heard["text"]
    assert spoken.startswith(heard["text"])
    assert len(heard["text"]) < len(spoken)
    marks = [r for r in timeline if r["event"] == "mark_played"]
    assert marks
    assert all(r["estimated"] for r in marks)
    # No audio of the interrupted turn reached the caller after killAudio.
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
    assert second["estimated"] is True

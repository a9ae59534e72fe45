"""Barge-in end to end over Vonage: a real gateway, the emulated Vonage leg, real VAD.

The Vonage dialect (providers.md §b.3) through the same session as Twilio: binary L16 at
16 kHz both ways in 20 ms frames, the flush is ``{"action":"clear"}``, and ``notify`` /
``websocket:notify`` settle what was heard (fixtures/projects/slow_bank).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from tests.calls.call_kit import CallWorld, cue, gateway_for
from voicegate.audio.resample import resample_all
from voicegate.callers.driver import drive
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.telephone import FRAME_MS
from voicegate.callers.vonage import VonageCaller

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
UUID = "aaaaaaaa-0000-4000-8000-0000000e2e00"
ANNOUNCEMENT = "Let me check that for you, this can take a moment."
RATE = 16000
FRAME_BYTES = RATE * 2 * FRAME_MS // 1000


def vonage_url(world: CallWorld) -> str:
    """The gateway's Vonage socket, next to the Twilio one the kit points at."""
    return world.url.removesuffix("/twilio") + "/vonage"


def wideband(relative: str, at_ms: int) -> Cue:
    """A fixture recording (8 kHz) placed in a 16 kHz call."""
    narrow = cue(relative, at_ms=at_ms)
    return replace(narrow, samples=resample_all(narrow.samples, 8000, RATE))


def records(world: CallWorld) -> list[dict[str, Any]]:
    timeline = world.runner.timeline(UUID)
    assert timeline is not None
    return list(timeline.records)


def first(timeline: list[dict[str, Any]], event: str, **match: Any) -> dict[str, Any]:
    return next(
        r for r in timeline if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    )


def bot_audio_between(caller: VonageCaller, start_ms: int, end_ms: int) -> bool:
    """Whether the caller heard any bot audio in [start_ms, end_ms)."""
    track = np.frombuffer(bytes(caller.bot_track), dtype="<i2")
    per_frame = FRAME_BYTES // 2
    frames = track[: len(track) // per_frame * per_frame].reshape(-1, per_frame)
    window = frames[start_ms // FRAME_MS : end_ms // FRAME_MS]
    return bool((window != 0).any())


async def test_vonage_leg_barging_in_gets_a_clear_and_only_what_was_heard(
    tmp_path: Path,
) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts) as world:
        cues = [wideband(BALANCE, at_ms=300), wideband(INTERRUPTION, at_ms=3400)]
        caller = VonageCaller(
            CallerScript(cues, RATE, tail_ms=8000), uuid=UUID, parameters={"tenant": "acme"}
        )
        assert await drive(vonage_url(world), caller, speed=2.0, max_ms=30_000) == 1000
    timeline = records(world)
    assert first(timeline, "call_started")["metadata"] == {"uuid": UUID, "tenant": "acme"}
    interruption = first(timeline, "interruption")
    flush = first(timeline, "flush_sent")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    # The flush is Vonage's own action, sent with the interruption, and Vonage got it.
    assert flush["verb"] == '{"action":"clear"}'
    assert flush["t_ms"] == interruption["t_ms"]
    assert caller.clears
    # websocket:notify decided what was heard: a strict prefix of what the turn queued.
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

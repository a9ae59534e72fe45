"""What a barge-in over a mod_audio_fork socket (Jambonz, FreeSWITCH) must show, checked once.

Both dialects flush with ``killAudio`` and acknowledge nothing, so the same call through either
(fixtures/projects/slow_bank: the caller asks for the balance and interrupts the announcement)
must end with the same timeline: the interruption and its flush at one instant, the heard text
of the cut turn a prefix of what was said and marked as estimated, no bot audio of that turn
after the flush, the cancelled tool run again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.calls.call_kit import CallWorld
from voicegate.callers.line_caller import LineCaller
from voicegate.callers.telephone import FRAME_MS

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
ANNOUNCEMENT = "Let me check that for you, this can take a moment."
TRANSCRIPTS = ["check my balance", "please try again"]
FRAME_SAMPLES = 160  # 20 ms at 8 kHz
KILL_AUDIO = '{"type":"killAudio"}'


def first(timeline: list[dict[str, Any]], event: str, **match: Any) -> dict[str, Any]:
    return next(
        r for r in timeline if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    )


def bot_audio_between(caller: LineCaller, start_ms: int, end_ms: int) -> bool:
    """Whether the caller heard any bot audio in [start_ms, end_ms)."""
    track = np.frombuffer(bytes(caller.bot_track), dtype="<i2")
    frames = track[: len(track) // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES)
    window = frames[start_ms // FRAME_MS : end_ms // FRAME_MS]
    return bool((window != 0).any())


def check_estimated_barge_in(world: CallWorld, caller: LineCaller) -> list[dict[str, Any]]:
    """The shared expectations; the call's timeline, for the dialect's own checks."""
    timeline_of = world.runner.timeline(caller.call_id)
    assert timeline_of is not None
    timeline = list(timeline_of.records)
    interruption = first(timeline, "interruption")
    flush = first(timeline, "flush_sent")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    # The flush is the fork's own verb, sent with the interruption, and the provider got it.
    assert flush["verb"] == KILL_AUDIO
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
    return timeline

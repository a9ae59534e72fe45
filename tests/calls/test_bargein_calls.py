"""Barge-in end to end: a real gateway on loopback, an emulated Twilio caller, real VAD.

Design §4's cancellation contract, checked from the call timeline, the audio the caller
heard, and the tool's own record (fixtures/projects/slow_bank).

The calls run on virtual time at max speed (docs/replay.md), the engine and the tool inline:
slow_bank's tool awaits its backend for 1.5 s of media (from about 2.1 s to 3.6 s), so the
caller's "please try again" at 2.6 s comes while it awaits. (On the wall clock at speed 2 the
tool lasted 3 s of media and the cue was at 3.4 s.) The threaded planes have their own tests
(test_blocking_tool.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from voicegate.callers.twilio import FRAME_BYTES, FRAME_MS, TwilioCaller
from voicegate.clock.virtual import run_virtual
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
NOISE = "human/alsa/Noise_8k.wav"
CALL_SID = "CA00000000000000000000000000000042"
ANNOUNCEMENT = "Let me check that for you, this can take a moment."


def records(world: CallWorld) -> list[dict[str, Any]]:
    timeline = world.runner.timeline(CALL_SID)
    assert timeline is not None
    return list(timeline.records)


def first(timeline: list[dict[str, Any]], event: str, **match: Any) -> dict[str, Any]:
    return next(
        r for r in timeline if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    )


def bot_audio_between(caller: TwilioCaller, start_ms: int, end_ms: int) -> bool:
    """Whether the caller heard any bot audio in [start_ms, end_ms)."""
    track = np.frombuffer(bytes(caller.bot_track), dtype=np.uint8)
    frames = track[: len(track) // FRAME_BYTES * FRAME_BYTES].reshape(-1, FRAME_BYTES)
    window = frames[start_ms // FRAME_MS : end_ms // FRAME_MS]
    return bool((window != 0xFF).any())


def test_speech_while_a_tool_awaits_in_silence_cancels_it(tmp_path: Path) -> None:
    run_virtual(_speech_while_a_tool_awaits_in_silence_cancels_it(tmp_path))


async def _speech_while_a_tool_awaits_in_silence_cancels_it(tmp_path: Path) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts, conversation="conversation_silent.yml") as world:
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=2600)))
        assert await world.call(caller, speed=1.0, max_ms=30_000) == 1000
    timeline = records(world)
    interruption = first(timeline, "interruption")
    flush = first(timeline, "flush_sent")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    # The tool saw CancelledError at its await, and the pending step ran again next turn.
    assert [(r["event"], r["attempt"]) for r in world.tool_record()] == [
        ("started", 1),
        ("cancelled", 1),
        ("started", 2),
        ("finished", 2),
    ]
    assert first(timeline, "tool_cancelled", turn_id="t1")["name"] == "check_balance"
    assert first(timeline, "tool_finished", turn_id="t2")["outcome"] == "ok"
    # The flush went out with the interruption; the caller heard nothing of turn t1.
    assert flush["t_ms"] == interruption["t_ms"]
    assert caller.clears
    assert not bot_audio_between(caller, 0, second_turn["t_ms"])
    # The tool's later context.send was never spoken; the re-run's was.
    said = [(r["turn_id"], r["text"]) for r in timeline if r["event"] == "say"]
    assert ("t1", "Found it.") not in said
    assert ("t2", "Found it.") in said
    # Memory written before the cancel was kept: the re-run counted on from it.
    assert first(timeline, "memory_set", turn_id="t2")["value"] == 2
    reopened = SqliteMemoryStore(tmp_path / "memory.sqlite3")  # as after a gateway restart
    assert json.loads(reopened.load(CALL_SID)[("project", "lookups_started")]) == 2
    reopened.close()
    # The history got only what was heard: nothing of t1, all of t2.
    heard = {r["turn_id"]: r for r in timeline if r["event"] == "heard"}
    assert heard["t1"]["text"] == ""
    assert heard["t1"]["interrupted"]
    assert heard["t2"]["text"] == "Found it. Your balance is 42 dollars."


def test_speech_while_the_bot_speaks_keeps_only_what_was_heard(tmp_path: Path) -> None:
    run_virtual(_speech_while_the_bot_speaks_keeps_only_what_was_heard(tmp_path))


async def _speech_while_the_bot_speaks_keeps_only_what_was_heard(tmp_path: Path) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts) as world:
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=2600)))
        assert await world.call(caller, speed=1.0, max_ms=30_000) == 1000
    timeline = records(world)
    flush = first(timeline, "flush_sent")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    heard = first(timeline, "heard", turn_id="t1")
    # Marks decided what was heard: a strict prefix of what the turn queued.
    spoken = "Sure. " + ANNOUNCEMENT
    assert heard["interrupted"]
    assert heard["text"]
    assert spoken.startswith(heard["text"])
    assert len(heard["text"]) < len(spoken)
    # No audio of the interrupted turn reached the caller after the flush.
    clear_ms = caller.clears[0]
    assert bot_audio_between(caller, 0, clear_ms)
    assert not bot_audio_between(caller, clear_ms + FRAME_MS, second_turn["t_ms"])
    assert flush["t_ms"] - first(timeline, "interruption")["onset_ms"] < 1000
    assert [r["event"] for r in world.tool_record()] == [
        "started",
        "cancelled",
        "started",
        "finished",
    ]


def test_noise_during_bot_speech_does_not_interrupt(tmp_path: Path) -> None:
    run_virtual(_noise_during_bot_speech_does_not_interrupt(tmp_path))


async def _noise_during_bot_speech_does_not_interrupt(tmp_path: Path) -> None:
    async with gateway_for(tmp_path, ["check my balance"]) as world:
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), cue(NOISE, at_ms=2800)))
        assert await world.call(caller, speed=1.0, max_ms=30_000) == 1000
    timeline = records(world)
    events = [r["event"] for r in timeline]
    assert "interruption" not in events
    assert "flush_sent" not in events
    assert not caller.clears
    assert [r["event"] for r in world.tool_record()] == ["started", "finished"]
    heard = first(timeline, "heard", turn_id="t1")
    assert heard == {**heard, "interrupted": False}
    assert heard["text"] == "Sure. " + ANNOUNCEMENT + " Found it. Your balance is 42 dollars."

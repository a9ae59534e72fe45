"""Barge-in and hang-up end to end over Asterisk chan_websocket: a real gateway, the emulated
channel (callers/asterisk.py), real VAD.

The Asterisk dialect (providers.md §b.10) through the same session as Twilio: media is binary
μ-law both ways, the flush is ``FLUSH_MEDIA``, and since Asterisk answers ``MARK_MEDIA`` with
``MEDIA_MARK_PROCESSED`` what the caller heard comes from Asterisk's queue, not an estimate
(fixtures/projects/slow_bank, fixtures/projects/goodbye).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.calls.call_kit import ROOT, CallWorld, cue, gateway_for, script_of
from voicegate.callers.asterisk import AsteriskCaller
from voicegate.callers.driver import drive
from voicegate.callers.telephone import FRAME_MS
from voicegate.codecs.asterisk_wire import ControlFormat
from voicegate.gateway.bargein import BargeInPolicy
from voicegate.gateway.session import SessionSettings

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
FIVE = "human/asterisk/digit-5.wav"
CHANNEL_ID = "1761245643.77"
ANNOUNCEMENT = "Let me check that for you, this can take a moment."
GOODBYE = ROOT / "fixtures" / "projects" / "goodbye"
FRAME_BYTES = 160  # 20 ms of μ-law at 8 kHz


def asterisk_url(world: CallWorld) -> str:
    """The gateway's Asterisk route, next to the Twilio one the kit points at."""
    return world.url.removesuffix("/twilio") + "/asterisk"


def timeline_of(world: CallWorld, call_id: str) -> list[dict[str, Any]]:
    kept = world.runner.timeline(call_id)
    assert kept is not None
    return list(kept.records)


def first(timeline: list[dict[str, Any]], event: str, **match: Any) -> dict[str, Any]:
    return next(
        r for r in timeline if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    )


def bot_audio_between(caller: AsteriskCaller, start_ms: int, end_ms: int) -> bool:
    """Whether the caller heard any bot audio in [start_ms, end_ms) (μ-law silence is 0xFF)."""
    track = np.frombuffer(bytes(caller.bot_track), dtype=np.uint8)
    frames = track[: len(track) // FRAME_BYTES * FRAME_BYTES].reshape(-1, FRAME_BYTES)
    window = frames[start_ms // FRAME_MS : end_ms // FRAME_MS]
    return bool((window != 0xFF).any())


async def test_asterisk_caller_barging_in_gets_flush_media_and_exact_heard_text(
    tmp_path: Path,
) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts) as world:
        script = script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400))
        caller = AsteriskCaller(script, channel_id=CHANNEL_ID, parameters={"tenant": "acme"})
        assert await drive(asterisk_url(world), caller, speed=4.0, max_ms=30_000) == 1000
    timeline = timeline_of(world, CHANNEL_ID)
    metadata = first(timeline, "call_started")["metadata"]
    assert (metadata["tenant"], metadata["channel_id"], metadata["format"]) == (
        "acme",
        CHANNEL_ID,
        "ulaw",
    )
    interruption = first(timeline, "interruption")
    flush = first(timeline, "flush_sent", verb="FLUSH_MEDIA")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    assert flush["t_ms"] == interruption["t_ms"]
    assert caller.clears
    # MEDIA_MARK_PROCESSED came back for the audio that played: nothing is an estimate.
    marks = [r for r in timeline if r["event"] == "mark_played"]
    assert marks
    assert not any(r.get("estimated") for r in marks)
    heard = first(timeline, "heard", turn_id="t1")
    spoken = "Sure. " + ANNOUNCEMENT
    assert heard["interrupted"]
    assert "estimated" not in heard
    assert heard["text"]
    assert spoken.startswith(heard["text"])
    assert len(heard["text"]) < len(spoken)
    # The caller-side records agree: every mark the gateway counted was echoed by "Asterisk".
    echoed = {r["name"] for r in caller.observed if r["event"] == "mark_echoed"}
    assert {r["name"] for r in marks} <= echoed
    # No audio of the interrupted turn reached the caller after FLUSH_MEDIA.
    clear_ms = caller.clears[0]
    assert bot_audio_between(caller, 0, clear_ms)
    assert not bot_audio_between(caller, clear_ms + FRAME_MS, second_turn["t_ms"])
    assert caller.dropped_bytes == 0  # whole frames only, as chan_websocket needs
    assert [r["event"] for r in world.tool_record()] == [
        "started",
        "cancelled",
        "started",
        "finished",
    ]
    second = first(timeline, "heard", turn_id="t2")
    assert second["text"].endswith("Found it. Your balance is 42 dollars.")
    assert second["interrupted"] is False


async def test_a_goodbye_hangs_up_with_hangup_once_asterisk_played_it(tmp_path: Path) -> None:
    # The plain-text control format this time: the gateway answers in the format MEDIA_START
    # came in, and sends HANGUP only after Asterisk reported the goodbye's last mark.
    async with gateway_for(tmp_path, ["goodbye"], project=GOODBYE) as world:
        script = script_of(cue(BALANCE, at_ms=300), tail_ms=30_000)
        caller = AsteriskCaller(script, channel_id=CHANNEL_ID, control=ControlFormat.PLAIN)
        assert await drive(asterisk_url(world), caller, speed=4.0, max_ms=60_000) == 1000
    timeline = timeline_of(world, CHANNEL_ID)
    marks = [r for r in timeline if r["event"] == "mark_played"]
    assert marks
    assert not any(r.get("estimated") for r in marks)
    ending = first(timeline, "call_ending")
    assert ending["t_ms"] >= marks[-1]["t_ms"]
    heard = first(timeline, "heard", turn_id="t1")
    assert (heard["text"], heard["interrupted"]) == ("Thank you for calling. Goodbye!", False)
    ended = first(timeline, "call_ended_by_agent")
    assert (ended["action"], ended["via"]) == ("hangup", "HANGUP")
    assert caller.hung_up_ms is not None


async def test_a_false_alarm_pauses_asterisk_and_continues_it_exactly(tmp_path: Path) -> None:
    # "five" (0.6 s of speech) is detected but, needing 1.5 s to interrupt, never confirmed.
    # Asterisk can pause: the gateway sends PAUSE_MEDIA at detection (the caller hears silence
    # at once) and CONTINUE_MEDIA on the false alarm, so nothing is flushed or sent twice.
    settings = SessionSettings(barge_in=BargeInPolicy(min_speech_ms=1500))
    async with gateway_for(tmp_path, ["check my balance", "five"], settings=settings) as world:
        cues = [cue(BALANCE, at_ms=300), cue(FIVE, after_bot_speech=1, delay_ms=700)]
        caller = AsteriskCaller(script_of(*cues), channel_id=CHANNEL_ID, quiet_ms=2000)
        assert await drive(asterisk_url(world), caller, speed=4.0, max_ms=30_000) == 1000
    timeline = timeline_of(world, CHANNEL_ID)
    events = [r["event"] for r in timeline]
    paused = first(timeline, "playout_paused")
    assert (paused["held"], paused["flushed"]) == (True, False)  # paused, its queue kept
    assert "playout_resumed" in events
    assert "interruption" not in events
    assert caller.clears == []  # no FLUSH_MEDIA
    noted = [r["event"] for r in caller.observed]
    assert noted.count("pause_media") == noted.count("continue_media") == 1
    said = [r["text"] for r in timeline if r["event"] == "say" and r["turn_id"] == "t1"]
    heard = first(timeline, "heard", turn_id="t1")
    assert heard["text"] == " ".join(said)
    assert heard["interrupted"] is False
    # Every sample of the answer reached the caller exactly once: Asterisk held its queue.
    answer_ms = sum(len(text) * 40 for text in said)
    assert played_ms(caller) == answer_ms


def played_ms(caller: AsteriskCaller) -> int:
    """Milliseconds of the bot the caller heard: 20 ms frames holding any bot audio."""
    track = np.frombuffer(bytes(caller.bot_track), dtype=np.uint8)
    frames = track[: len(track) // FRAME_BYTES * FRAME_BYTES].reshape(-1, FRAME_BYTES)
    return int((frames != 0xFF).any(axis=1).sum()) * FRAME_MS

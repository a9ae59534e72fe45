"""Barge-in end to end over FreeSWITCH mod_audio_fork: a real gateway, the emulated fork, real VAD.

The FreeSWITCH dialect (providers.md §b.9) through the same session as Twilio: the socket
speaks ``audio.drachtio.org``, caller audio is binary L16, bot audio goes back as ``playAudio``
files of the configured chunk, the flush is ``killAudio``, and since mod_audio_fork has no
playback acknowledgement what was heard comes from the playout clock and is marked as an
estimate (fixtures/projects/slow_bank).
"""

from __future__ import annotations

from pathlib import Path

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from tests.calls.test_jambonz_calls import ANNOUNCEMENT, BALANCE, INTERRUPTION, first
from voicegate.callers.driver import drive
from voicegate.callers.freeswitch import FreeSwitchCaller
from voicegate.callers.telephone import FRAME_MS

UUID = "7f4de4bc-0000-4000-8000-00000000e2e0"
FRAME_SAMPLES = 160  # 20 ms at 8 kHz


def freeswitch_url(world: CallWorld) -> str:
    """The gateway's mod_audio_fork socket, next to the Twilio one the kit points at."""
    return world.url.removesuffix("/twilio") + "/freeswitch"


def bot_audio_between(caller: FreeSwitchCaller, start_ms: int, end_ms: int) -> bool:
    """Whether the caller heard any bot audio in [start_ms, end_ms)."""
    track = bytes(caller.bot_track)
    frame = FRAME_SAMPLES * 2
    window = track[start_ms // FRAME_MS * frame : end_ms // FRAME_MS * frame]
    return any(window)


async def test_freeswitch_fork_barging_in_gets_kill_audio_and_an_estimate_of_what_was_heard(
    tmp_path: Path,
) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts) as world:
        script = script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400))
        caller = FreeSwitchCaller(script, uuid=UUID, parameters={"tenant": "acme"})
        url = freeswitch_url(world)
        code = await drive(url, caller, speed=2.0, max_ms=30_000, subprotocols=caller.subprotocols)
        assert code == 1000
    timeline_of = world.runner.timeline(UUID)
    assert timeline_of is not None
    timeline = list(timeline_of.records)
    metadata = first(timeline, "call_started")["metadata"]
    assert (metadata["tenant"], metadata["uuid"]) == ("acme", UUID)
    interruption = first(timeline, "interruption")
    flush = first(timeline, "flush_sent")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    # The flush is mod_audio_fork's own verb, sent with the interruption, and FreeSWITCH got it.
    assert flush["verb"] == '{"type":"killAudio"}'
    assert flush["t_ms"] == interruption["t_ms"]
    assert caller.clears
    # Bot audio came as playAudio files of the default 200 ms chunk, not one per 20 ms frame.
    played_ms = len(caller.bot_track) // (FRAME_SAMPLES * 2) * FRAME_MS
    assert 0 < caller.files < played_ms // 100
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

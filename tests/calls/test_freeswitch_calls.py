"""Barge-in end to end over FreeSWITCH mod_audio_fork: a real gateway, the emulated fork, real VAD.

The FreeSWITCH dialect (providers.md §b.9) through the same session as Twilio: the socket
speaks ``audio.drachtio.org``, caller audio is binary L16, bot audio goes back as ``playAudio``
files of the configured chunk, the flush is ``killAudio``, and since mod_audio_fork has no
playback acknowledgement what was heard comes from the playout clock and is marked as an
estimate (fixtures/projects/slow_bank; tests/calls/fork_bargein.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from tests.calls.fork_bargein import (
    BALANCE,
    FRAME_SAMPLES,
    INTERRUPTION,
    TRANSCRIPTS,
    check_estimated_barge_in,
    first,
)
from voicegate.callers.driver import drive
from voicegate.callers.freeswitch import FreeSwitchCaller
from voicegate.callers.telephone import FRAME_MS

UUID = "7f4de4bc-0000-4000-8000-00000000e2e0"


def freeswitch_url(world: CallWorld) -> str:
    """The gateway's mod_audio_fork socket, next to the Twilio one the kit points at."""
    return world.url.removesuffix("/twilio") + "/freeswitch"


async def test_freeswitch_fork_barging_in_gets_kill_audio_and_an_estimate_of_what_was_heard(
    tmp_path: Path,
) -> None:
    async with gateway_for(tmp_path, TRANSCRIPTS) as world:
        script = script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400))
        caller = FreeSwitchCaller(script, uuid=UUID, parameters={"tenant": "acme"})
        url = freeswitch_url(world)
        code = await drive(url, caller, speed=2.0, max_ms=30_000, subprotocols=caller.subprotocols)
        assert code == 1000
    timeline = check_estimated_barge_in(world, caller)
    metadata = first(timeline, "call_started")["metadata"]
    assert (metadata["tenant"], metadata["uuid"]) == ("acme", UUID)
    # Bot audio came as playAudio files of the 200 ms default chunk, not one per 20 ms frame:
    # fewer than one file per 100 ms of bot audio heard (the tails of utterances are shorter).
    frames = np.frombuffer(bytes(caller.bot_track), dtype="<i2").reshape(-1, FRAME_SAMPLES)
    spoken_ms = int((frames != 0).any(axis=1).sum()) * FRAME_MS
    assert 0 < caller.files < spoken_ms // 100

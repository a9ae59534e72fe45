"""Barge-in end to end over Jambonz: a real gateway, the emulated listen verb, real VAD.

The Jambonz dialect (providers.md §b.9) through the same session as Twilio: the socket speaks
``audio.jambonz.org``, audio is binary L16 both ways, the flush is ``killAudio``, and since
Jambonz has no playback acknowledgement what was heard comes from the playout clock and is
marked as an estimate (fixtures/projects/slow_bank; tests/calls/fork_bargein.py).
"""

from __future__ import annotations

from pathlib import Path

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from tests.calls.fork_bargein import (
    BALANCE,
    INTERRUPTION,
    TRANSCRIPTS,
    check_estimated_barge_in,
    first,
)
from voicegate.callers.driver import drive
from voicegate.callers.jambonz import JambonzCaller

CALL_SID = "1a2b0000-0000-4000-8000-00000000e2e0"


def jambonz_url(world: CallWorld) -> str:
    """The gateway's Jambonz stream, next to the Twilio one the kit points at."""
    return world.url.removesuffix("/twilio") + "/jambonz"


async def test_jambonz_caller_barging_in_gets_kill_audio_and_an_estimate_of_what_was_heard(
    tmp_path: Path,
) -> None:
    async with gateway_for(tmp_path, TRANSCRIPTS) as world:
        script = script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400))
        caller = JambonzCaller(script, call_sid=CALL_SID, parameters={"tenant": "acme"})
        url = jambonz_url(world)
        code = await drive(url, caller, speed=2.0, max_ms=30_000, subprotocols=caller.subprotocols)
        assert code == 1000
    timeline = check_estimated_barge_in(world, caller)
    metadata = first(timeline, "call_started")["metadata"]
    assert (metadata["tenant"], metadata["callSid"]) == ("acme", CALL_SID)

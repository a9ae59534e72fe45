"""Barge-in end to end over Genesys AudioHook: a real gateway, the emulated Audio Connector.

The Genesys dialect (providers.md §b.7) through the same session as Twilio: a signed upgrade,
the open/opened transaction, ping/pong, binary PCMU both ways within Genesys's rate limit (the
emulation refuses a faster server), the flush is an ``event`` with a ``barge_in`` entity, and
what was heard is the playout clock's estimate, marked so (fixtures/projects/slow_bank).
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from voicegate.callers.driver import drive
from voicegate.callers.genesys import GenesysCaller
from voicegate.callers.telephone import FRAME_MS
from voicegate.gateway.options import BrowserOptions, GatewayOptions, GenesysOptions, TwilioOptions

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
CONVERSATION = "090eaa2f-0000-4000-8000-00000000e2e0"
ANNOUNCEMENT = "Let me check that for you, this can take a moment."
API_KEY = "genesys-e2e-key"
SECRET = base64.b64encode(b"a client secret of the integration").decode()
FRAME_BYTES = 160  # 20 ms of PCMU


def genesys_url(world: CallWorld) -> str:
    """The gateway's AudioHook route, next to the Twilio one the kit points at."""
    return world.url.removesuffix("/twilio") + "/genesys"


def first(timeline: list[dict[str, Any]], event: str, **match: Any) -> dict[str, Any]:
    return next(
        r for r in timeline if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    )


def bot_audio_between(caller: GenesysCaller, start_ms: int, end_ms: int) -> bool:
    """Whether the caller heard any bot audio in [start_ms, end_ms)."""
    track = np.frombuffer(bytes(caller.bot_track), dtype=np.uint8)
    frames = track[: len(track) // FRAME_BYTES * FRAME_BYTES].reshape(-1, FRAME_BYTES)
    window = frames[start_ms // FRAME_MS : end_ms // FRAME_MS]
    return bool((window != 0xFF).any())


async def test_genesys_caller_barging_in_gets_barge_in_and_an_estimate_of_what_was_heard(
    tmp_path: Path,
) -> None:
    transcripts = ["check my balance", "please try again"]
    options = GatewayOptions(
        port=0,
        twilio=TwilioOptions(parameters={}),
        browser=BrowserOptions(),
        genesys=GenesysOptions(api_key=API_KEY, client_secret=SECRET),
    )
    async with gateway_for(tmp_path, transcripts, options=options) as world:
        script = script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400))
        caller = GenesysCaller(
            script,
            conversation_id=CONVERSATION,
            parameters={"queue": "billing"},
            api_key=API_KEY,
            client_secret=SECRET,
        )
        url = genesys_url(world)
        headers = caller.upgrade_headers(url, int(time.time()))
        assert await drive(url, caller, speed=2.0, max_ms=30_000, headers=headers) == 1000
    timeline_of = world.runner.timeline(CONVERSATION)
    assert timeline_of is not None
    timeline = list(timeline_of.records)
    assert first(timeline, "call_started")["metadata"]["queue"] == "billing"
    assert caller.opened
    assert caller.pongs >= 1  # every ping got its pong
    interruption = first(timeline, "interruption")
    flush = first(timeline, "flush_sent")
    second_turn = first(timeline, "turn_started", turn_id="t2")
    # The flush is Genesys's barge_in event, sent with the interruption, and Genesys got it.
    assert flush["verb"] == "event/barge_in"
    assert flush["t_ms"] == interruption["t_ms"]
    assert caller.clears
    heard = first(timeline, "heard", turn_id="t1")
    spoken = "Sure. " + ANNOUNCEMENT
    assert heard["interrupted"]
    assert heard["estimated"]
    assert spoken.startswith(heard["text"])
    assert len(heard["text"]) < len(spoken)
    # No audio of the interrupted turn reached the caller after barge_in.
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
    assert first(timeline, "call_ended")["reason"] == "genesys sent close (end)"

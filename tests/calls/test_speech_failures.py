"""A speech engine that fails ends the turn with a spoken apology, never the call (issue 7)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from tests.calls.call_kit import cue, gateway_for, script_of
from voicegate.callers.driver import drive
from voicegate.callers.twilio import TwilioCaller
from voicegate.errors import SpeechError
from voicegate.speech.fakes import ToneTextToSpeech
from voicegate.speech.ports import Samples

CALL_SID = "CA00000000000000000000000000000042"


class BrokenMidSentence(ToneTextToSpeech):
    """A synthesiser whose service fails on one sentence, after sending some audio."""

    def __init__(self, failing_text: str) -> None:
        super().__init__(16000, ms_per_char=40)
        self._failing = failing_text

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        async for chunk in super().synthesize(text):
            if text == self._failing:
                raise SpeechError("the speech service answered HTTP 503")
            yield chunk


async def test_a_tts_failure_ends_the_turn_with_an_apology_and_the_call_goes_on(
    tmp_path: Path,
) -> None:
    tts = BrokenMidSentence("Let me check that for you, this can take a moment.")
    async with gateway_for(tmp_path, ["check my balance"], tts=tts) as world:
        caller = TwilioCaller(script_of(cue("synth/festival/balance_8k.wav", at_ms=300)))
        assert await drive(world.url, caller, speed=2.0, max_ms=30_000) == 1000
    timeline = world.runner.timeline(CALL_SID)
    assert timeline is not None
    (error,) = timeline.named("speech_error")
    assert error["engine"] == "tts"
    assert "503" in error["reason"]
    apology = [r for r in timeline.named("say") if r.get("source") == "gateway"]
    assert len(apology) == 1
    assert "trouble" in apology[0]["text"]
    # The turn ended there: its tool was cancelled, and the caller heard "Sure." and the apology.
    assert [r["event"] for r in world.tool_record()] == ["started", "cancelled"]
    heard = timeline.named("heard")[0]
    assert heard["text"].startswith("Sure. Sorry")
    assert caller.bot_started_ms

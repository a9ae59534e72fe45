"""A failed model call: the caller hears the configured response, the cause is logged, and
the call goes on (issue 18)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from tests.calls.call_kit import SLOW_BANK, cue, gateway_for, script_of, settled
from voicegate.callers.driver import drive
from voicegate.callers.twilio import TwilioCaller
from voicegate.gateway.session import SessionSettings

CALL_SID = "CA00000000000000000000000000000042"
SORRY = "Sorry, the line is busy on my side. Say that again?"
STRICT = "turns:\n  - user: check my balance\n    say: Your balance is 42 dollars.\n"


async def test_a_failed_model_call_is_answered_and_the_call_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The scripted model refuses input its script does not expect: an LLMError, as a model
    # endpoint that failed after its retries would raise.
    project = tmp_path / "bank"
    shutil.copytree(SLOW_BANK, project)
    (project / "strict.yml").write_text(STRICT, encoding="utf-8")
    transcripts = ["what is the weather", "check my balance"]
    settings = SessionSettings(error_response=SORRY)
    caplog.set_level(logging.WARNING, "voicegate.gateway.session")
    run = gateway_for(
        tmp_path, transcripts, settings=settings, project=project, conversation="strict.yml"
    )
    async with run as world:
        balance = "synth/festival/balance_8k.wav"
        caller = TwilioCaller(script_of(cue(balance, at_ms=300), cue(balance, at_ms=9000)))
        assert await drive(world.url, caller, speed=2.0, max_ms=40_000) == 1000
        await settled(world)
    timeline = world.runner.timeline(CALL_SID)
    assert timeline is not None
    first, *later = timeline.named("turn_ended")
    assert first["reason"] == "error"
    assert "what is the weather" in first["detail"]
    spoken = [r["text"] for r in timeline.named("say") if r.get("source") == "gateway"]
    assert spoken == [SORRY]
    assert any(r["reason"] == "completed" for r in later)  # the next turn was answered
    failed = [r for r in caplog.records if "failed" in r.getMessage()]
    assert any("what is the weather" in r.getMessage() for r in failed)

"""Replay a recorded caller against the demo bank agent, inside pytest, in a few seconds.

Run it with ``python -m pytest examples/replay_in_pytest``. The gateway is the real one on a
free loopback port; only the speech engines are swapped for fast stand-ins (the recogniser
reads the transcript from a file, the synthesiser speaks tones), so the test checks the
dialogue and barge-in logic, not Whisper.
"""

from dataclasses import replace
from pathlib import Path

import pytest

import voicegate

HERE = Path(__file__).parent
pytestmark = pytest.mark.asyncio  # pip install pytest-asyncio


def fast_settings(tmp_path: Path) -> voicegate.Settings:
    """The demo's settings on a free port, with stand-in speech and a private data directory."""
    transcript = tmp_path / "transcript.txt"
    transcript.write_text("check my balance\n", encoding="utf-8")
    settings = voicegate.load_settings(port=0)
    return replace(
        settings,
        speech=replace(settings.speech, stt=f"scripted:{transcript}", tts="tone"),
        store=replace(settings.store, data_dir=tmp_path / "data"),
        # The caller below streams at 4x real time; the gateway's pacing must allow it.
        limits=replace(settings.limits, media_max_speed=5.0),
    )


async def test_the_bank_tells_the_caller_their_balance(tmp_path: Path) -> None:
    async with voicegate.open_gateway(fast_settings(tmp_path)) as gateway:
        url = gateway.base_url.replace("http", "ws") + "/twilio"
        wav = HERE / "check_my_balance.wav"
        # The demo's balance lookup takes 1.5 s of wall clock (6 s of media at 4x): stay on.
        code = await voicegate.call_twilio(url, wav, tail_ms=8000, speed=4.0)
        timeline = await voicegate.call_timeline(gateway, "CA00000000000000000000000000000042")
    said = [r["text"] for r in timeline if r["event"] == "say"]
    assert code == 1000
    assert said[0].startswith("Hello, this is Example Bank.")
    assert any("balance" in text for text in said)
    assert timeline[-1]["event"] == "call_closed"

"""The emulated callers' acoustic echo loopback (voicegate/callers/echo.py)."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from voicegate.audio.g711 import samples_to_ulaw_bytes, ulaw_bytes_to_samples
from voicegate.callers.echo import EchoPath, band_pass
from voicegate.callers.script import CallerScript
from voicegate.callers.twilio import TwilioCaller

RATE = 8000


def tone(hz: float, ms: int, amplitude: float = 10000.0) -> np.ndarray:
    t = np.arange(RATE * ms // 1000) / RATE
    return (np.sin(2 * np.pi * hz * t) * amplitude).astype(np.int16)


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))


def test_the_echo_is_the_heard_audio_later_quieter_and_in_the_phone_band() -> None:
    echo = EchoPath(RATE, delay_ms=100, gain_db=-20.0)
    heard = np.concatenate([tone(1000, 200), tone(100, 200)])
    out = []
    for start in range(0, len(heard) + 1600, 160):
        chunk = heard[start : start + 160]
        echo.heard(np.pad(chunk, (0, 160 - len(chunk))))
        out.append(echo.mix(np.zeros(160, dtype=np.int16)))
    mixed = np.concatenate(out)
    assert not mixed[:800].any()  # nothing before the 100 ms delay
    in_band = mixed[800 + 400 : 800 + 1200]  # the 1 kHz tone, 20 dB down
    assert 20 * np.log10(rms(in_band) / rms(tone(1000, 100))) == pytest.approx(-20.0, abs=1.0)
    below = mixed[800 + 2000 : 800 + 2800]  # the 100 Hz hum: outside 300-3,400 Hz
    assert rms(below) < rms(in_band) / 100


def test_a_twilio_caller_with_echo_sends_back_the_bot_audio_it_played() -> None:
    caller = TwilioCaller(
        CallerScript([], RATE, tail_ms=0), echo=EchoPath(RATE, delay_ms=60, gain_db=-6.0)
    )
    caller.opening()
    bot = samples_to_ulaw_bytes(tone(1000, 100))
    caller.receive(
        json.dumps({"event": "media", "media": {"payload": base64.b64encode(bot).decode()}})
    )
    sent = []
    for _ in range(12):
        media = json.loads(caller.tick()[-1])
        sent.append(ulaw_bytes_to_samples(base64.b64decode(media["media"]["payload"])))
    levels = [rms(frame) for frame in sent]
    assert max(levels[:3]) < 50  # 60 ms of delay
    assert 2000 < max(levels[4:8]) < 6000  # the bot's tone, 6 dB down and band-limited


def test_a_long_call_keeps_only_the_delay_line_and_echoes_the_same() -> None:
    # Played: 2 minutes of noise in 20 ms frames. The echo of each frame must be the whole
    # signal's band-passed copy, delayed and scaled, while only about the delay is kept
    # (the whole call was kept, and copied at every frame: quadratic in the call's length).
    played = np.random.default_rng(5).normal(0, 3000, RATE * 120).astype(np.int16)
    echo = EchoPath(RATE, delay_ms=100, gain_db=-6.0)
    out, held = [], []
    for start in range(0, len(played), 160):
        echo.heard(played[start : start + 160])
        out.append(echo.mix(np.zeros(160, dtype=np.int16)))
        held.append(echo.held_samples)
    delay = RATE // 10
    expected = np.convolve(played.astype(np.float64), band_pass(RATE))[: len(played) - delay]
    expected = np.concatenate([np.zeros(delay), expected * 10 ** (-6 / 20)])
    assert np.abs(np.concatenate(out) - np.round(expected)).max() <= 1
    assert max(held) <= delay + 101 + 160  # the delay, the filter's taps and one frame

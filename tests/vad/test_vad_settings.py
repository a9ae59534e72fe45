"""VadSettings: sensible defaults, and a clear ConfigError for every bad value."""

from __future__ import annotations

import dataclasses

import pytest

from voicegate.errors import AudioFormatError, ConfigError
from voicegate.vad import ScorerKind, VadSettings
from voicegate.vad.settings import check_sample_rate, frames_for


def test_defaults_suit_telephony_barge_in() -> None:
    defaults = VadSettings()
    assert defaults.scorer is ScorerKind.COMBINED
    assert defaults.frame_ms == 20
    assert defaults.start_ms < defaults.stop_ms


def test_settings_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        VadSettings().stop_ms = 10  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("scorer", "combined"),
        ("frame_ms", 25),
        ("frame_ms", True),
        ("webrtc_aggressiveness", 4),
        ("webrtc_aggressiveness", -1),
        ("speech_threshold", 0.0),
        ("speech_threshold", 1.5),
        ("speech_threshold", "high"),
        ("maybe_threshold", float("nan")),
        ("energy_rise_db", 0.0),
        ("energy_rise_db", "10"),
        ("noise_floor_window_ms", 0),
        ("start_ms", 0),
        ("start_ms", 40.0),
        ("stop_ms", -20),
        ("onset_lookback_ms", 0),
        ("silero_preroll_ms", -20),
    ],
)
def test_a_bad_value_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=field):
        VadSettings(**{field: value})  # type: ignore[arg-type]


def test_maybe_threshold_cannot_exceed_speech_threshold() -> None:
    with pytest.raises(ConfigError, match="maybe_threshold"):
        VadSettings(speech_threshold=0.3, maybe_threshold=0.4)


def test_lookback_must_hold_the_start_duration() -> None:
    with pytest.raises(ConfigError, match="onset_lookback_ms"):
        VadSettings(start_ms=200, onset_lookback_ms=100)


def test_durations_need_not_be_whole_frames() -> None:
    settings = VadSettings(frame_ms=30)
    assert frames_for(settings.stop_ms, settings.frame_ms) == 17
    assert frames_for(100, 30) == 4  # a 100 ms pre-roll: 3.3 frames, rounded up
    assert frames_for(0, 30) == 0


@pytest.mark.parametrize("rate", [8000, 16000])
def test_native_rates_pass(rate: int) -> None:
    check_sample_rate(rate)


@pytest.mark.parametrize("rate", [11025, 24000, 44100, 48000])
def test_other_rates_are_refused(rate: int) -> None:
    with pytest.raises(AudioFormatError, match=f"{rate} Hz"):
        check_sample_rate(rate)

"""Frame levels and the running noise floor."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voicegate.errors import AudioFormatError, ConfigError
from voicegate.vad.energy import NoiseFloor
from voicegate.vad.frames import SILENCE_DBFS, check_frame, iter_frames, level_dbfs


def test_digital_silence_sits_at_the_floor_value() -> None:
    assert level_dbfs(np.zeros(160, dtype=np.int16)) == SILENCE_DBFS


def test_a_full_scale_square_wave_is_zero_dbfs() -> None:
    square = np.array([-32768, -32768] * 80, dtype=np.int16)
    assert level_dbfs(square) == pytest.approx(0.0)


def test_a_sine_is_three_db_under_its_peak() -> None:
    t = np.arange(320) / 16000
    sine = np.round(16384 * np.sin(2 * math.pi * 500 * t)).astype(np.int16)
    assert level_dbfs(sine) == pytest.approx(20 * math.log10(0.5) - 3.01, abs=0.02)


def test_the_floor_is_the_quietest_level_in_the_window() -> None:
    floor = NoiseFloor(window_frames=3)
    assert [floor.update(level) for level in (-60, -40, -30, -50, -20, -20)] == [
        -60,
        -60,
        -60,
        -50,
        -50,
        -50,
    ]


def test_a_rise_is_measured_against_the_floor() -> None:
    floor = NoiseFloor(window_frames=50)
    assert not floor.rises(-60.0, 10.0)
    assert not floor.rises(-51.0, 10.0)
    assert floor.rises(-50.0, 10.0)


def test_a_window_needs_a_frame() -> None:
    with pytest.raises(ConfigError):
        NoiseFloor(window_frames=0)


def test_frames_are_checked() -> None:
    good = np.zeros(160, dtype=np.int16)
    assert check_frame(good, 160) is good
    with pytest.raises(AudioFormatError, match="160 samples"):
        check_frame(np.zeros(159, dtype=np.int16), 160)
    with pytest.raises(AudioFormatError, match="int16"):
        check_frame(np.zeros(160, dtype=np.float32), 160)
    with pytest.raises(AudioFormatError, match="1-D"):
        check_frame(np.zeros((2, 80), dtype=np.int16), 160)
    with pytest.raises(AudioFormatError, match="numpy"):
        check_frame(bytes(320), 160)


def test_iter_frames_leaves_out_a_partial_tail() -> None:
    samples = np.arange(50, dtype=np.int16)
    frames = list(iter_frames(samples, 16))
    assert [len(frame) for frame in frames] == [16, 16, 16]
    assert np.array_equal(np.concatenate(frames), samples[:48])


@pytest.mark.parametrize("window", [1, 2, 5, 50])
def test_the_floor_is_the_plain_minimum_of_the_window_at_every_frame(window: int) -> None:
    rng = np.random.default_rng(window)
    levels = [float(x) for x in rng.choice([-90.0, -60.0, -40.0, -30.0], size=400)]
    levels += [float(x) for x in rng.normal(-50, 15, size=400)]
    floor = NoiseFloor(window)
    for index, level in enumerate(levels):
        assert floor.update(level) == min(levels[max(0, index - window + 1) : index + 1])

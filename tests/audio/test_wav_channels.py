"""read_wav's channel choice: one voice of a dual-channel call recording, or the mix."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from tests.audio.stereo_kit import tone, write_channels
from voicegate.audio.wav import parse_channel, read_wav
from voicegate.errors import AudioFormatError

FESTIVAL = Path(__file__).resolve().parents[2] / "fixtures" / "audio" / "synth" / "festival"


def test_each_channel_reads_as_it_was_written_and_mix_is_their_average(tmp_path: Path) -> None:
    agent = tone(4000, 8000)
    caller = read_wav(FESTIVAL / "yes_8k.wav").samples
    write_channels(tmp_path / "call.wav", 8000, agent, caller)
    padded = np.zeros(max(len(agent), len(caller)), dtype=np.int16)
    first, second = padded.copy(), padded.copy()
    first[: len(agent)], second[: len(caller)] = agent, caller
    assert np.array_equal(read_wav(tmp_path / "call.wav", 1).samples, first)
    right = read_wav(tmp_path / "call.wav", 2)
    assert np.array_equal(right.samples, second)
    assert (right.sample_rate, right.channels) == (8000, 2)
    average = np.rint((first.astype(np.float64) + second) / 2).astype(np.int16)
    assert np.array_equal(read_wav(tmp_path / "call.wav").samples, average)


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_a_chosen_channel_reads_as_a_mono_file_of_it_would(tmp_path: Path, width: int) -> None:
    # Three channels of noise, so no channel can pass for another.
    frames = np.random.default_rng(width).integers(0, 256, (500, 3 * width), dtype=np.uint8)
    write_raw(tmp_path / "three.wav", frames, 3, width)
    for channel in (1, 2, 3):
        column = frames[:, (channel - 1) * width : channel * width]
        write_raw(tmp_path / "mono.wav", np.ascontiguousarray(column), 1, width)
        chosen = read_wav(tmp_path / "three.wav", channel).samples
        assert np.array_equal(chosen, read_wav(tmp_path / "mono.wav").samples)


def write_raw(path: Path, frames: np.ndarray, channels: int, width: int) -> None:
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(width)
        writer.setframerate(16000)
        writer.writeframes(frames.tobytes())


def test_a_channel_the_file_lacks_is_named(tmp_path: Path) -> None:
    write_channels(tmp_path / "call.wav", 8000, tone(800, 8000), tone(800, 8000))
    with pytest.raises(AudioFormatError, match=r"call.wav: no channel 3 in a file of 2 .*1 to 2"):
        read_wav(tmp_path / "call.wav", 3)
    with pytest.raises(AudioFormatError, match=r"no channel 0"):
        read_wav(tmp_path / "call.wav", 0)
    write_channels(tmp_path / "mono.wav", 8000, tone(800, 8000))
    assert len(read_wav(tmp_path / "mono.wav", 1).samples) == 800
    with pytest.raises(AudioFormatError, match=r"of 1 channel\(s\): choose 1, or mix"):
        read_wav(tmp_path / "mono.wav", 2)


@pytest.mark.parametrize(
    ("text", "channel"), [("mix", None), ("left", 1), ("RIGHT", 2), (" 3 ", 3), ("12", 12)]
)
def test_channels_are_named_mix_left_right_or_numbered_from_1(
    text: str, channel: int | None
) -> None:
    assert parse_channel(text) == channel


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "centre", "", "both"])
def test_anything_else_is_not_a_channel(text: str) -> None:
    with pytest.raises(ValueError, match="is not a channel: give mix, left, right or 1, 2"):
        parse_channel(text)

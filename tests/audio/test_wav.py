"""WAV I/O: mono PCM16 round-trips; garbage is refused with AudioFormatError.

The other WAV files recorders and tools write are in tests/audio/test_wav_formats.py.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from voicegate.audio.wav import read_wav, write_wav
from voicegate.errors import AudioFormatError


def write_raw_wav(path: Path, *, channels: int, width: int, rate: int, frames: bytes) -> None:
    """A WAV file with any header, written with the standard library."""
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(width)
        writer.setframerate(rate)
        writer.writeframes(frames)


@pytest.mark.parametrize("rate", [8000, 16000, 24000, 48000])
def test_round_trip_keeps_every_sample_and_the_rate(tmp_path: Path, rate: int) -> None:
    samples = np.random.default_rng(rate).integers(-32768, 32768, size=rate // 3).astype(np.int16)
    samples[:2] = [-32768, 32767]
    path = tmp_path / "audio.wav"
    write_wav(path, samples, rate)
    audio = read_wav(path)
    assert audio.sample_rate == rate
    assert audio.samples.dtype == np.int16
    assert np.array_equal(audio.samples, samples)
    assert audio.duration_ms == len(samples) * 1000 // rate


def test_file_bytes_are_little_endian_pcm16(tmp_path: Path) -> None:
    path = tmp_path / "audio.wav"
    write_wav(path, np.array([1, -2, 256], dtype=np.int16), 8000)
    with wave.open(str(path), "rb") as reader:
        assert reader.readframes(3) == b"\x01\x00\xfe\xff\x00\x01"


def test_empty_audio_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "empty.wav"
    write_wav(path, np.zeros(0, dtype=np.int16), 16000)
    assert len(read_wav(path).samples) == 0


@pytest.mark.parametrize(
    "content",
    [b"", b"not a wav file at all", b"RIFF\x10\x00\x00\x00WAVEfmt ", bytes(range(256)) * 4],
    ids=["empty", "text", "truncated-header", "binary-noise"],
)
def test_garbage_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "garbage.wav"
    path.write_bytes(content)
    with pytest.raises(AudioFormatError, match=r"garbage\.wav"):
        read_wav(path)

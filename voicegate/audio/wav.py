"""WAV read/write for mono 16-bit PCM, the format of every fixture and CLI file."""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicegate.audio.pcm import Samples
from voicegate.errors import AudioFormatError


@dataclass(frozen=True, slots=True)
class WavAudio:
    """Mono PCM16 samples and their rate."""

    samples: Samples
    sample_rate: int

    @property
    def duration_ms(self) -> int:
        """Length in whole milliseconds."""
        return len(self.samples) * 1000 // self.sample_rate


def read_wav(path: str | Path) -> WavAudio:
    """Read a mono 16-bit PCM WAV file; anything else is an ``AudioFormatError``."""
    try:
        with wave.open(str(path), "rb") as reader:
            channels, width, rate = (
                reader.getnchannels(),
                reader.getsampwidth(),
                reader.getframerate(),
            )
            data = reader.readframes(reader.getnframes())
    except (wave.Error, EOFError) as error:
        detail = str(error) or "empty or cut short"
        raise AudioFormatError(f"{path}: not a readable WAV file ({detail})") from error
    if channels != 1 or width != 2:
        raise AudioFormatError(
            f"{path}: expected mono 16-bit PCM, got {channels} channel(s) of {8 * width}-bit"
        )
    return WavAudio(np.frombuffer(data, dtype="<i2").astype(np.int16), rate)


def write_wav(path: str | Path, samples: Samples, sample_rate: int) -> None:
    """Write mono PCM16 samples as a WAV file."""
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(sample_rate)
        writer.writeframes(np.asarray(samples, dtype="<i2").tobytes())

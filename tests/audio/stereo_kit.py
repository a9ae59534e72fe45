"""Multi-channel WAV files, as dual-channel call recorders write them, made with ``wave``."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from voicegate.audio.pcm import Samples


def write_channels(path: Path, rate: int, *channels: Samples) -> None:
    """A 16-bit WAV file with one channel per array, the shorter ones padded with silence."""
    frames = np.zeros((max(len(c) for c in channels), len(channels)), dtype="<i2")
    for index, samples in enumerate(channels):
        frames[: len(samples), index] = samples
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(len(channels))
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(frames.tobytes())


def tone(count: int, rate: int, hz: float = 440.0, level: int = 8000) -> Samples:
    """``count`` samples of a sine: a sound no recogniser takes for words."""
    return (level * np.sin(2 * np.pi * hz * np.arange(count) / rate)).astype(np.int16)

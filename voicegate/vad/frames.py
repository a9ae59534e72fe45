"""Frame arithmetic and checks shared by the scorers (PCM16 mono numpy frames)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from voicegate.errors import AudioFormatError

Frame = npt.NDArray[np.int16]

#: Level reported for digital silence, so the log never sees zero.
SILENCE_DBFS = -100.0

_FULL_SCALE_POWER = 32768.0**2

# dtypes as objects: numpy converts a scalar type on every call (~0.3 µs, per frame per call).
_INT16 = np.dtype(np.int16)
_FLOAT64 = np.dtype(np.float64)


def frame_length(sample_rate: int, frame_ms: int) -> int:
    """Samples in one frame of ``frame_ms`` at ``sample_rate``."""
    return sample_rate * frame_ms // 1000


def check_frame(frame: object, length: int) -> Frame:
    """Return ``frame`` if it is a 1-D int16 array of ``length`` samples, else refuse it."""
    if not isinstance(frame, np.ndarray):
        raise AudioFormatError(f"a frame must be a numpy int16 array, got {type(frame).__name__}")
    if frame.dtype != _INT16 or frame.ndim != 1:
        raise AudioFormatError(
            f"a frame must be 1-D int16 samples, got {frame.ndim}-D {frame.dtype}"
        )
    if len(frame) != length:
        raise AudioFormatError(f"a frame must hold {length} samples, got {len(frame)}")
    return frame


def iter_frames(samples: Frame, length: int) -> Iterator[Frame]:
    """Consecutive whole frames of ``samples``; a trailing partial frame is left out."""
    for start in range(0, len(samples) - length + 1, length):
        yield samples[start : start + length]


def level_dbfs(frame: Frame) -> float:
    """Mean power of a frame in dB relative to a full-scale square wave."""
    if not len(frame):
        return SILENCE_DBFS
    wide = frame.astype(_FLOAT64)
    return power_dbfs(float(np.dot(wide, wide)) / len(wide))  # np.dot: ~10x np.mean's speed


def power_dbfs(power: float) -> float:
    """A frame's mean power (of PCM16 samples) in dB as :func:`level_dbfs` reports it."""
    if power <= 0.0:
        return SILENCE_DBFS
    return max(SILENCE_DBFS, 10.0 * math.log10(power / _FULL_SCALE_POWER))

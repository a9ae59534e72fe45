"""A channel's waveform reduced to a few hundred columns: each column's lowest and highest
sample, as fractions of full scale, so a drawing of a 60 s call stays small."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from voicegate.audio.pcm import Samples

_FULL_SCALE = 32768.0


@dataclass(frozen=True, slots=True)
class Envelope:
    """Per column, the lowest and highest sample in [-1, 1]; ``columns`` span ``duration_ms``."""

    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    duration_ms: int


def envelope(samples: Samples, sample_rate: int, duration_ms: int, columns: int) -> Envelope:
    """``samples`` (from media time 0) over ``duration_ms``, in ``columns`` columns."""
    total = max(1, sample_rate * duration_ms // 1000)
    padded = np.zeros(total, dtype=np.float64)
    used = min(total, len(samples))
    padded[:used] = samples[:used] / _FULL_SCALE
    # Column starts; a column narrower than a sample repeats its one sample (reduceat's rule).
    starts = np.linspace(0, total, columns, endpoint=False).astype(np.int64)
    low = np.minimum.reduceat(padded, starts)
    high = np.maximum.reduceat(padded, starts)
    return Envelope(low, high, duration_ms)

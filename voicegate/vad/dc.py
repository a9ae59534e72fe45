"""A running DC offset, taken out of every frame before the scorers see it.

A constant offset is no sound, but the scorers react to it. Measured on the labelled human
fixtures with 0.5 s of lead-in (tests/vad/test_dc_offset.py has the case that failed): at
8 kHz Silero found no speech at all in ``human/pocketsphinx/goforward_16k.wav`` at half level
over a 0.3 full-scale offset, and an offset of only 1 % of full scale under speech at
-35 dBFS moved the median detected onset from 4 to 38 ms after the labelled one (at 8 kHz
μ-law), because the level gate measures the offset as part of every frame's power and the
speech no longer stands ``energy_rise_db`` above the floor. Offsets come from cheap sound
cards and microphone preamps; telephone networks usually block them, recordings do not.

The offset is tracked as an exponential average of frame means (time constant 500 ms, long
against a syllable's low-frequency swing, short against a call) and subtracted as a whole
number of LSBs, so a stream with no offset (under :data:`MIN_OFFSET_LSB`) reaches the
scorers unchanged, sample for sample.
"""

from __future__ import annotations

import numpy as np

from voicegate.vad.frames import Frame, level_dbfs, power_dbfs

#: How quickly the estimate follows a change of offset.
TIME_CONSTANT_MS = 500

#: Smaller offsets are left alone: the smallest G.711 step (μ-law decodes to 0, ±8, ...), so
#: a quiet background rounded to two neighbouring codes is no offset. Measured: μ-law quiet
#: speech (goforward, peak -45 dBFS) decodes with a -2.8 LSB mean from a background of 0
#: and -8, and shifting that background to 2 and -6 lost the speech in the combined scorer,
#: which found it before. An offset of 33 LSB (0.1 % of full scale) already dated quiet
#: onsets up to 176 ms late, so the offsets that matter lie well above this.
MIN_OFFSET_LSB = 8

_INT16_MIN, _INT16_MAX = -32768, 32767
_INT64 = np.dtype(np.int64)  # an object: no scalar-type conversion per frame
_FLOAT64 = np.dtype(np.float64)


class DcRemover:
    """Subtracts the running mean of one stream's frames from each frame."""

    def __init__(self, frame_ms: int, time_constant_ms: int = TIME_CONSTANT_MS) -> None:
        self._weight = min(1.0, frame_ms / time_constant_ms)
        self._offset = 0.0
        self._frames = 0
        self._ones = np.ones(0)  # for the mean as a dot product (remove_measured)

    def remove(self, frame: Frame) -> Frame:
        """The frame less the stream's offset (the frame itself when that rounds to 0)."""
        # An int64 sum: a third of np.mean's cost, and this runs on every frame of every call.
        mean = int(np.add.reduce(frame, dtype=_INT64)) / len(frame) if len(frame) else 0.0
        return self._subtract(frame, mean)

    def remove_measured(self, frame: Frame) -> tuple[Frame, float]:
        """:meth:`remove`, and the level (``level_dbfs``) of the frame it returns.

        One float64 copy gives both the sum and the power (two dot products): ~1 µs less per
        frame than a sum and a separate level. Both are exact, every partial sum being a
        whole number far below 2**53, so the mean and the level are the ones
        :meth:`remove` and ``level_dbfs`` compute, bit for bit (tests/vad/test_dc_offset.py).
        """
        count = len(frame)
        if not count:
            return self._subtract(frame, 0.0), level_dbfs(frame)
        if len(self._ones) != count:
            self._ones = np.ones(count)
        wide = frame.astype(_FLOAT64)
        out = self._subtract(frame, float(np.dot(wide, self._ones)) / count)
        if out is not frame:  # shifted: the level of what the scorers get
            return out, level_dbfs(out)
        return frame, power_dbfs(float(np.dot(wide, wide)) / count)

    def _subtract(self, frame: Frame, mean: float) -> Frame:
        # The plain mean of the frames so far until there are a time constant's worth, then
        # the exponential average: one noisy first frame does not set the estimate.
        self._frames += 1
        self._offset += max(self._weight, 1 / self._frames) * (mean - self._offset)
        shift = round(self._offset)
        if abs(shift) < MIN_OFFSET_LSB:
            return frame
        # In place on one int32 copy: half the cost of np.clip on a 20 ms frame.
        shifted = frame.astype(np.int32)
        shifted -= shift
        np.minimum(shifted, _INT16_MAX, out=shifted)
        np.maximum(shifted, _INT16_MIN, out=shifted)
        return shifted.astype(np.int16)

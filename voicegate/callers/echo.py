"""An acoustic echo loopback for emulated callers: the bot's voice coming back, as on a phone.

Issue 14 §4. On a speakerphone or a hybrid-imbalanced PSTN line the caller's microphone picks
up what the caller hears. :class:`EchoPath` keeps what the emulated caller played and returns,
for each outgoing frame, that audio ``delay_ms`` earlier, band-limited like a telephone channel
(300-3,400 Hz, ITU-T G.712's voice band) and attenuated by ``gain_db``. Stateless filtering over
the kept history (a windowed-sinc FIR), so the echo of a given call is the same every run.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from voicegate.audio.pcm import Samples

_TAPS = 101


def band_pass(
    sample_rate: int, low_hz: float = 300.0, high_hz: float = 3400.0
) -> npt.NDArray[np.float64]:
    """A linear-phase FIR passing ``low_hz``-``high_hz`` (Hamming-windowed sinc difference)."""
    n = np.arange(_TAPS) - (_TAPS - 1) / 2
    high = min(high_hz, 0.45 * sample_rate)

    def low_pass(cutoff: float) -> npt.NDArray[np.float64]:
        kernel: npt.NDArray[np.float64] = (
            2 * cutoff / sample_rate * np.sinc(2 * cutoff / sample_rate * n)
        )
        return kernel

    taps: npt.NDArray[np.float64] = (low_pass(high) - low_pass(low_hz)) * np.hamming(_TAPS)
    return taps


class EchoPath:
    """What the caller heard, fed back into what the caller sends."""

    def __init__(self, sample_rate: int, *, delay_ms: int, gain_db: float) -> None:
        self._delay = sample_rate * delay_ms // 1000
        self._gain = 10.0 ** (gain_db / 20.0)
        self._taps = band_pass(sample_rate)
        # What the caller played that a later frame's echo can still reach: a delay line.
        # Kept whole, appending each 20 ms frame copied the call so far (quadratic: a
        # 10-minute replay with echo spent minutes of CPU here).
        self._heard = np.zeros(0, dtype=np.float64)
        self._heard_from = 0  # the sample index of the call at which ``_heard`` starts
        self._sent = 0  # samples of caller audio sent so far

    @property
    def held_samples(self) -> int:
        """How many played samples the delay line holds (about the delay, however long the call)."""
        return len(self._heard)

    def heard(self, samples: Samples) -> None:
        """The caller's speaker played ``samples`` (silence included, one frame per tick)."""
        self._heard = np.concatenate([self._heard, samples.astype(np.float64)])

    def mix(self, caller: Samples) -> Samples:
        """``caller``'s next frame with the echo of the bot added (clipped to PCM16)."""
        count = len(caller)
        end = self._sent + count - self._delay  # echo source: [end - count, end)
        self._sent += count
        begin = end - count - (_TAPS - 1)
        source = np.zeros(count + _TAPS - 1)
        played = self._heard_from + len(self._heard)
        lo, hi = max(begin, self._heard_from), max(min(end, played), self._heard_from)
        if hi > lo:
            start = self._heard_from
            source[lo - begin : hi - begin] = self._heard[lo - start : hi - start]
        echo = np.convolve(source, self._taps, mode="valid") * self._gain
        mixed = caller.astype(np.float64) + echo
        out: Samples = np.clip(np.round(mixed), -32768, 32767).astype(np.int16)
        self._forget(end - (_TAPS - 1))  # the next frame's source starts at or after this
        return out

    def _forget(self, before: int) -> None:
        """Drop the played samples before call sample ``before``: no echo reaches them again."""
        drop = min(before - self._heard_from, len(self._heard))
        if drop > 0:
            self._heard = self._heard[drop:]
            self._heard_from += drop

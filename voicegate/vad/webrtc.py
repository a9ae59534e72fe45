"""The webrtcvad frame scorer (``webrtcvad-wheels`` distribution, import name ``webrtcvad``).

webrtcvad takes 10, 20 or 30 ms of 16-bit mono PCM at 8, 16, 32 or 48 kHz and an
aggressiveness mode 0-3 (its README); voicegate uses it at 8 and 16 kHz. It analyses the
band below 4 kHz only (it works at 8 kHz internally), and it calls steady broadband noise
speech in almost every frame (``fixtures/audio/human/alsa/Noise_*.wav``), which is why the
barge-in default only uses it as a gate in front of Silero.
"""

from __future__ import annotations

import sys

import webrtcvad

from voicegate.errors import ConfigError
from voicegate.vad.frames import Frame, check_frame, frame_length
from voicegate.vad.scoring import FrameEvidence
from voicegate.vad.settings import FRAME_MS_CHOICES, check_sample_rate

_LITTLE_ENDIAN = sys.byteorder == "little"


class WebrtcScorer:
    """Frame-by-frame webrtcvad decisions as probabilities 0.0 or 1.0."""

    def __init__(self, sample_rate: int, aggressiveness: int = 2, frame_ms: int = 20) -> None:
        check_sample_rate(sample_rate)
        if isinstance(aggressiveness, bool) or aggressiveness not in (0, 1, 2, 3):
            raise ConfigError(f"webrtcvad aggressiveness must be 0-3, got {aggressiveness!r}")
        if frame_ms not in FRAME_MS_CHOICES:
            raise ConfigError(f"webrtcvad takes 10, 20 or 30 ms frames, got {frame_ms!r} ms")
        self._sample_rate = sample_rate
        self._frame_ms = frame_ms
        self._frame_length = frame_length(sample_rate, frame_ms)
        self._vad = webrtcvad.Vad(aggressiveness)

    @property
    def sample_rate(self) -> int:
        """Samples per second of the frames it takes."""
        return self._sample_rate

    @property
    def frame_ms(self) -> int:
        """Length of the frames it takes, in ms."""
        return self._frame_ms

    def is_speech(self, frame: Frame) -> bool:
        """webrtcvad's decision for the next frame."""
        return self.decide(check_frame(frame, self._frame_length))

    def decide(self, frame: Frame) -> bool:
        """:meth:`is_speech` for a frame the caller already checked (one check per frame)."""
        # webrtcvad reads little-endian PCM16: the frame's own bytes on a little-endian host.
        data = frame.tobytes() if _LITTLE_ENDIAN else frame.astype("<i2").tobytes()
        return bool(self._vad.is_speech(data, self._sample_rate))

    def probability(self, frame: Frame) -> float:
        """The decision as a probability: 1.0 for speech, 0.0 otherwise."""
        return 1.0 if self.is_speech(frame) else 0.0

    def evidence(self, frame: Frame) -> FrameEvidence:
        """Score the next frame of the stream."""
        return FrameEvidence(self.probability(frame))

"""The barge-in default: webrtcvad as the cheap gate, Silero as the confirmation.

Per frame:

* the **gate** opens when webrtcvad says speech, or when the frame's level stands
  ``energy_rise_db`` above the running noise floor. The level test is there because
  webrtcvad only looks below 4 kHz: at 16 kHz an /s/ lives mostly above that (in
  ``human/alsa/Side_Right_16k.wav`` it is 140 ms long at -30 dBFS and webrtcvad misses it).
* **Silero runs only while the gate is open.** Closed-gate frames wait in a short pre-roll.
  When the gate reopens, Silero is fed the pre-roll first, so the model always sees
  contiguous audio: after a gap no longer than the pre-roll it simply continues through the
  gap; after a longer gap it is reset and warmed up on the pre-roll, as if the stream began
  just before the sound.
* the evidence is Silero's probability (0.0 while the gate is closed), and ``sound`` when
  webrtcvad calls the frame speech *and* it rises above the floor: such a frame may date an
  onset (fricatives before the vowel that Silero confirms), but only Silero confirms.

Why not keep Silero running on every frame? Measured on call-like streams built from the
fixtures (28 utterances at 8 kHz, 17 at 16 kHz, with pauses, line noise and bursts of the
noise fixture), with the default 60 ms start: Silero on every frame ran 1.6-2.3x the
windows, detected speech later (median 101-185 ms after onset, against 90-96 ms here) and
missed one 8 kHz utterance; with a 20-40 ms start it also gave 3-4 false starts on noise
bursts. Skipping closed-gate audio without a reset was as cheap as this but carried the
model's speech state into the next noise burst (2-3 false starts). Reset-and-warm-up gave
no false start and no miss in every variant tried.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

from voicegate.vad.energy import NoiseFloor
from voicegate.vad.frames import Frame, check_frame, frame_length, level_dbfs
from voicegate.vad.scoring import FrameEvidence
from voicegate.vad.settings import VadSettings, frames_for
from voicegate.vad.silero import SileroModel, SileroScorer
from voicegate.vad.webrtc import WebrtcScorer

#: The evidence of a closed-gate frame (most frames of a call): one shared, frozen instance.
_CLOSED = FrameEvidence(0.0)


class SpeechGate(Protocol):
    """The cheap per-frame speech test in front of Silero (webrtcvad in production)."""

    def is_speech(self, frame: Frame) -> bool:
        """Whether the next frame sounds like speech."""
        ...


class CombinedScorer:
    """webrtcvad + level gate in front of a Silero model that runs only when it opens."""

    def __init__(
        self,
        sample_rate: int,
        settings: VadSettings,
        gate: SpeechGate | None = None,
        *,
        model: SileroModel | None = None,
    ) -> None:
        self._silero = SileroScorer(sample_rate, settings.frame_ms, model=model)
        self._frame_length = frame_length(sample_rate, settings.frame_ms)
        self._gate: SpeechGate = gate or WebrtcScorer(
            sample_rate, settings.webrtc_aggressiveness, settings.frame_ms
        )
        # The frame is checked once, in prepare: the own webrtc gate need not check it again.
        self._is_speech: Callable[[Frame], bool] = (
            self._gate.decide if isinstance(self._gate, WebrtcScorer) else self._gate.is_speech
        )
        self._floor = NoiseFloor(frames_for(settings.noise_floor_window_ms, settings.frame_ms))
        self._rise_db = settings.energy_rise_db
        preroll_frames = frames_for(settings.silero_preroll_ms, settings.frame_ms)
        self._preroll: deque[Frame] = deque(maxlen=preroll_frames)
        self._contiguous = True  # the pre-roll holds every frame Silero has not seen
        self._sound = False  # the frame being prepared dates an onset (see prepare)

    @property
    def sample_rate(self) -> int:
        """Samples per second of the frames it takes."""
        return self._silero.sample_rate

    @property
    def frame_ms(self) -> int:
        """Length of the frames it takes, in ms."""
        return self._silero.frame_ms

    @property
    def silero_windows_run(self) -> int:
        """How many Silero windows ran so far (the expensive part of the cost)."""
        return self._silero.windows_run

    @property
    def silero(self) -> SileroScorer:
        """The Silero stream whose queued windows a batch scores (vad/silero_batch.py)."""
        return self._silero

    def evidence(self, frame: Frame) -> FrameEvidence:
        """Score the next frame of the stream."""
        evidence = self.prepare(frame)
        if evidence is not None:
            return evidence
        self._silero.score_queued()
        return self.scored()

    def prepare(self, frame: Frame) -> FrameEvidence | None:
        """The frame's evidence, or None while the Silero windows it finished wait to be scored."""
        check_frame(frame, self._frame_length)
        return self.prepare_measured(frame, level_dbfs(frame))

    def prepare_measured(self, frame: Frame, level: float) -> FrameEvidence | None:
        """:meth:`prepare` for a checked frame whose level (``level_dbfs``) is known."""
        speechlike = self._is_speech(frame)
        rises = self._floor.rises(level, self._rise_db)
        if not (speechlike or rises):
            self._hold(frame)
            return _CLOSED
        self._sound = speechlike and rises
        if self._confirm(frame):
            return None
        return self.scored()

    def scored(self) -> FrameEvidence:
        """The prepared frame's evidence, once its Silero windows were scored and settled."""
        return FrameEvidence(self._silero.latest, sound=self._sound)

    def _hold(self, frame: Frame) -> None:
        if len(self._preroll) == self._preroll.maxlen:
            self._contiguous = False  # the oldest held frame (or, with no pre-roll, this one)
        self._preroll.append(frame)

    def _confirm(self, frame: Frame) -> bool:
        """Feed Silero the pre-roll and the frame; True if windows wait to be scored."""
        if not self._contiguous:
            self._silero.reset()
        for held in self._preroll:
            self._silero.feed_checked(held)
        self._preroll.clear()
        self._contiguous = True
        return self._silero.feed_checked(frame)

"""What a frame scorer reports, and how the detector turns it into a per-frame verdict."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from voicegate.vad.frames import Frame


@dataclass(frozen=True, slots=True)
class FrameEvidence:
    """A scorer's findings for one frame.

    ``probability`` is the speech probability (0 or 1 from webrtcvad; 0 when a gated model
    did not run). ``sound`` says the frame stands out from the background in a way the cheap
    gate finds speech-like; it may date an onset but never confirms speech on its own.
    """

    probability: float
    sound: bool = False


class Verdict(enum.Enum):
    """One frame, as the detector's state machine sees it."""

    SILENCE = "silence"  # breaks a starting run, counts towards the end of speech
    #: Sound the cheap gate calls speech but the model scored below ``maybe_threshold``: it
    #: may open or extend a run (date an onset), but once speech is going it is silence.
    SOUND = "sound"
    MAYBE = "maybe"  # may be speech: opens or extends a run, keeps speech going
    SPEECH = "speech"  # confirmed speech: counts towards the start duration


class FrameScorer(Protocol):
    """Scores consecutive frames of one stream; stateful, synchronous, never shared."""

    @property
    def sample_rate(self) -> int:
        """Samples per second of the frames it takes."""
        ...

    @property
    def frame_ms(self) -> int:
        """Length of the frames it takes, in ms."""
        ...

    def evidence(self, frame: Frame) -> FrameEvidence:
        """Score the next frame of the stream."""
        ...


def classify(evidence: FrameEvidence, speech_threshold: float, maybe_threshold: float) -> Verdict:
    """Map a scorer's evidence onto the three verdicts through the two thresholds."""
    if evidence.probability >= speech_threshold:
        return Verdict.SPEECH
    if evidence.probability >= maybe_threshold:
        return Verdict.MAYBE
    return Verdict.SOUND if evidence.sound else Verdict.SILENCE

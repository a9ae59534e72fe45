"""Voice-activity detection: frame scorers and the hysteresis detector.

Scorers (webrtcvad, Silero, and the combined barge-in default) turn PCM16 frames into
evidence; the detector maps evidence to verdicts through two thresholds and steps a pure
state machine (quiet -> starting -> speaking -> stopping) that emits SpeechStarted and
SpeechEnded stamped with media time derived from frame counts.
"""

from voicegate.vad.combined import CombinedScorer
from voicegate.vad.detector import Detector, Segment, build_scorer, detect_segments
from voicegate.vad.machine import MachineState, Phase, SpeechEnded, SpeechStarted, VadEvent
from voicegate.vad.scoring import FrameEvidence, FrameScorer, Verdict, classify
from voicegate.vad.settings import ScorerKind, VadSettings
from voicegate.vad.silero import SileroModel, SileroScorer
from voicegate.vad.webrtc import WebrtcScorer

__all__ = [
    "CombinedScorer",
    "Detector",
    "FrameEvidence",
    "FrameScorer",
    "MachineState",
    "Phase",
    "ScorerKind",
    "Segment",
    "SileroModel",
    "SileroScorer",
    "SpeechEnded",
    "SpeechStarted",
    "VadEvent",
    "VadSettings",
    "Verdict",
    "WebrtcScorer",
    "build_scorer",
    "classify",
    "detect_segments",
]

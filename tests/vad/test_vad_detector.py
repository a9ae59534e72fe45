"""The detector: scorer evidence -> verdicts -> events on media time from frame counts."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from tests.vad.vad_kit import HUMAN
from voicegate.audio.wav import read_wav
from voicegate.errors import AudioFormatError, ConfigError
from voicegate.vad import (
    CombinedScorer,
    Detector,
    FrameEvidence,
    Phase,
    ScorerKind,
    Segment,
    SileroScorer,
    SpeechEnded,
    SpeechStarted,
    VadSettings,
    WebrtcScorer,
    build_scorer,
    detect_segments,
)

Samples = npt.NDArray[np.int16]
SETTINGS = VadSettings(frame_ms=20, start_ms=60, stop_ms=100, onset_lookback_ms=300)


class ScriptedScorer:
    """Replays a fixed list of evidence, one item per frame."""

    sample_rate = 8000

    def __init__(self, evidence: list[FrameEvidence], frame_ms: int = 20) -> None:
        self._evidence = iter(evidence)
        self.frame_ms = frame_ms

    def evidence(self, frame: Samples) -> FrameEvidence:
        return next(self._evidence)


def scripted(codes: str) -> list[FrameEvidence]:
    """'.' silent, 'w' webrtc-and-level sound, 'p' probability 0.3, 'S' probability 0.9."""
    table = {
        ".": FrameEvidence(0.0),
        "w": FrameEvidence(0.0, sound=True),
        "p": FrameEvidence(0.3),
        "S": FrameEvidence(0.9),
    }
    return [table[code] for code in codes]


def push_all(detector: Detector, count: int) -> list[tuple[int, object]]:
    frame = np.zeros(160, dtype=np.int16)
    seen: list[tuple[int, object]] = []
    for index in range(count):
        seen.extend((index, event) for event in detector.push(frame))
    return seen


def test_media_time_comes_from_frame_counts() -> None:
    codes = "..wpSSS...p....."
    detector = Detector(ScriptedScorer(scripted(codes)), SETTINGS)
    events = push_all(detector, len(codes))
    assert events == [
        (6, SpeechStarted(onset_ms=40, detected_ms=140)),
        (15, SpeechEnded(end_ms=220, detected_ms=320)),
    ]
    assert detector.media_ms == len(codes) * 20
    assert detector.phase is Phase.QUIET


def test_the_detector_says_when_it_hears_a_voice_it_has_not_confirmed() -> None:
    # After the end of speech, a run of possible speech (MAYBE, then SPEECH) is heard from
    # its first frame; the start is confirmed only after start_ms (60) of SPEECH.
    codes = "SSSS...w..pSSS"
    detector = Detector(ScriptedScorer(scripted(codes)), SETTINGS)
    frame = np.zeros(160, dtype=np.int16)
    heard = []
    events = []
    for _ in codes:
        events.extend(detector.push(frame))
        heard.append(detector.hears_voice)
    assert heard == [code in "pS" for code in codes]
    assert [type(e) for e in events] == [SpeechStarted, SpeechEnded, SpeechStarted]
    assert detector.phase is Phase.SPEAKING


def test_finish_closes_speech_at_the_end_of_the_stream() -> None:
    detector = Detector(ScriptedScorer(scripted("SSSSS")), SETTINGS)
    assert push_all(detector, 5) == [(2, SpeechStarted(0, 60))]
    assert detector.finish() == (SpeechEnded(end_ms=100, detected_ms=100),)
    assert detector.phase is Phase.QUIET


def test_a_scorer_with_other_frames_is_refused() -> None:
    with pytest.raises(ConfigError, match="30 ms"):
        Detector(ScriptedScorer([], frame_ms=30), SETTINGS)


@pytest.mark.parametrize(
    ("kind", "scorer_type"),
    [
        (ScorerKind.WEBRTC, WebrtcScorer),
        (ScorerKind.SILERO, SileroScorer),
        (ScorerKind.COMBINED, CombinedScorer),
    ],
)
def test_build_scorer_builds_the_named_kind(kind: ScorerKind, scorer_type: type) -> None:
    scorer = build_scorer(16000, VadSettings(scorer=kind, frame_ms=30))
    assert isinstance(scorer, scorer_type)
    assert (scorer.sample_rate, scorer.frame_ms) == (16000, 30)


def test_build_scorer_refuses_other_rates() -> None:
    with pytest.raises(AudioFormatError, match="22050"):
        build_scorer(22050, VadSettings())


def test_detect_segments_on_silence_finds_nothing() -> None:
    assert detect_segments(np.zeros(16000, dtype=np.int16), 16000, VadSettings()) == []


def test_detect_segments_reads_whole_frames_only() -> None:
    audio = read_wav(HUMAN / "asterisk" / "goodbye.wav").samples
    padded = np.concatenate([audio, np.zeros(7000, dtype=np.int16)])
    whole = detect_segments(padded, 8000, VadSettings())
    ragged = detect_segments(padded[:-13], 8000, VadSettings())
    assert len(whole) == 1
    assert ragged == whole


def test_detect_segments_is_repeatable() -> None:
    audio = read_wav(HUMAN / "pocketsphinx" / "goforward_16k.wav").samples
    first = detect_segments(audio, 16000, VadSettings())
    assert first == detect_segments(audio, 16000, VadSettings())
    assert all(isinstance(segment, Segment) for segment in first)

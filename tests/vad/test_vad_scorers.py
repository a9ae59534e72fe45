"""The frame scorers on synthetic input: silence is never speech; arguments are checked."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from tests.vad.vad_kit import HUMAN, silence, white_noise
from voicegate.audio.wav import read_wav
from voicegate.errors import AudioFormatError, ConfigError
from voicegate.vad import (
    CombinedScorer,
    FrameEvidence,
    SileroScorer,
    VadSettings,
    Verdict,
    WebrtcScorer,
    classify,
)
from voicegate.vad.frames import iter_frames

Samples = npt.NDArray[np.int16]
RATES = [8000, 16000]


def frames_of(samples: Samples, sample_rate: int, frame_ms: int = 20) -> list[Samples]:
    return list(iter_frames(samples, sample_rate * frame_ms // 1000))


# --- webrtcvad -------------------------------------------------------------------------


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("frame_ms", [10, 20, 30])
@pytest.mark.parametrize("aggressiveness", [0, 1, 2, 3])
def test_webrtc_hears_no_speech_in_silence(rate: int, frame_ms: int, aggressiveness: int) -> None:
    scorer = WebrtcScorer(rate, aggressiveness, frame_ms)
    frame = silence(rate, frame_ms)
    assert [scorer.probability(frame) for _ in range(20)] == [0.0] * 20


@pytest.mark.parametrize("rate", RATES)
def test_webrtc_calls_loud_broadband_noise_speech(rate: int) -> None:
    # The weakness the combined scorer exists for (fixtures/audio/README.md).
    scorer = WebrtcScorer(rate, 3)
    decisions = [scorer.is_speech(f) for f in frames_of(white_noise(rate, 1.0, -15), rate)]
    assert sum(decisions) > 0.9 * len(decisions)


@pytest.mark.parametrize("aggressiveness", [-1, 4, True, "2"])
def test_webrtc_refuses_a_bad_aggressiveness(aggressiveness: object) -> None:
    with pytest.raises(ConfigError, match="aggressiveness"):
        WebrtcScorer(8000, aggressiveness)  # type: ignore[arg-type]


def test_webrtc_refuses_a_bad_frame_length() -> None:
    with pytest.raises(ConfigError, match="10, 20 or 30"):
        WebrtcScorer(8000, 2, frame_ms=40)


@pytest.mark.parametrize("rate", [11025, 32000, 48000])
def test_webrtc_refuses_other_rates(rate: int) -> None:
    with pytest.raises(AudioFormatError, match=str(rate)):
        WebrtcScorer(rate)


def test_webrtc_refuses_a_frame_of_the_wrong_size() -> None:
    with pytest.raises(AudioFormatError, match="160 samples"):
        WebrtcScorer(8000).probability(np.zeros(320, dtype=np.int16))


# --- Silero ----------------------------------------------------------------------------


@pytest.mark.parametrize("rate", RATES)
def test_silero_hears_no_speech_in_silence(rate: int) -> None:
    scorer = SileroScorer(rate)
    probabilities = [scorer.probability(silence(rate)) for _ in range(25)]
    assert max(probabilities) < 0.1


@pytest.mark.parametrize("rate", RATES)
def test_silero_hears_no_speech_in_white_noise(rate: int) -> None:
    scorer = SileroScorer(rate)
    for dbfs in (-50, -30, -15):
        probabilities = [scorer.probability(f) for f in frames_of(white_noise(rate, 1, dbfs), rate)]
        assert max(probabilities) < VadSettings().speech_threshold


@pytest.mark.parametrize(("rate", "window"), [(8000, 256), (16000, 512)])
@pytest.mark.parametrize("frame_ms", [10, 20, 30])
def test_silero_runs_one_window_per_32_ms_fed(rate: int, window: int, frame_ms: int) -> None:
    scorer = SileroScorer(rate, frame_ms)
    assert scorer.window_samples == window
    frame = silence(rate, frame_ms)
    for count in range(1, 40):
        scorer.probability(frame)
        assert scorer.windows_run == count * len(frame) // window


def test_silero_reports_zero_before_its_first_window() -> None:
    assert SileroScorer(16000).probability(silence(16000)) == 0.0


def test_silero_gives_the_same_stream_result_for_any_frame_size() -> None:
    # 480 ms holds whole frames of 10, 20 and 30 ms and whole 32 ms windows.
    audio = read_wav(HUMAN / "pocketsphinx" / "cards-005_16k.wav").samples
    checkpoint = 16000 * 480 // 1000
    results = {}
    for frame_ms in (10, 20, 30):
        scorer = SileroScorer(16000, frame_ms)
        per_frame = 16000 * frame_ms // 1000
        trace = []
        for index, frame in enumerate(iter_frames(audio, per_frame), start=1):
            probability = scorer.probability(frame)
            if index * per_frame % checkpoint == 0:
                trace.append(probability)
        results[frame_ms] = trace
    assert results[10] == results[20] == results[30]
    assert max(results[20]) > 0.9  # the trace holds speech, not just zeros


def test_silero_reset_starts_a_new_stream() -> None:
    audio = read_wav(HUMAN / "asterisk" / "digit-5.wav").samples
    scorer = SileroScorer(8000)
    first = [scorer.probability(f) for f in frames_of(audio, 8000)]
    scorer.reset()
    assert scorer.probability(silence(8000)) == 0.0
    scorer.reset()
    assert [scorer.probability(f) for f in frames_of(audio, 8000)] == first


def test_silero_refuses_bad_arguments() -> None:
    with pytest.raises(AudioFormatError, match="24000"):
        SileroScorer(24000)
    with pytest.raises(ConfigError, match="10, 20 or 30"):
        SileroScorer(16000, frame_ms=32)
    with pytest.raises(AudioFormatError, match="320 samples"):
        SileroScorer(16000).probability(np.zeros(512, dtype=np.int16))


# --- combined ---------------------------------------------------------------------------


@pytest.mark.parametrize("rate", RATES)
def test_combined_keeps_silero_off_in_silence(rate: int) -> None:
    scorer = CombinedScorer(rate, VadSettings())
    evidence = [scorer.evidence(silence(rate)) for _ in range(50)]
    assert evidence == [FrameEvidence(0.0, sound=False)] * 50
    assert scorer.silero_windows_run == 0


@pytest.mark.parametrize("rate", RATES)
def test_combined_never_confirms_white_noise(rate: int) -> None:
    settings = VadSettings()
    scorer = CombinedScorer(rate, settings)
    verdicts = {
        classify(scorer.evidence(f), settings.speech_threshold, settings.maybe_threshold)
        for dbfs in (-50, -30, -15)
        for f in frames_of(white_noise(rate, 1, dbfs, seed=-dbfs), rate)
    }
    assert Verdict.SPEECH not in verdicts
    assert scorer.silero_windows_run > 0  # the gate opened: webrtcvad likes loud noise


def _silero_trace(frames: list[Samples], rate: int) -> list[float]:
    scorer = SileroScorer(rate)
    return [scorer.probability(frame) for frame in frames]


class ScriptedGate:
    """A gate that opens on loud frames only, so tests know exactly when it is open."""

    def is_speech(self, frame: Samples) -> bool:
        return bool(np.any(frame))


@pytest.mark.parametrize("rate", RATES)
def test_combined_feeds_silero_through_a_short_gap(rate: int) -> None:
    loud = frames_of(white_noise(rate, 0.2, -15), rate)
    frames = loud + [silence(rate)] * 3 + loud
    scorer = CombinedScorer(rate, VadSettings(silero_preroll_ms=100), ScriptedGate())
    got = [scorer.evidence(frame).probability for frame in frames]
    expected = _silero_trace(frames, rate)
    assert got[:10] == expected[:10]
    assert got[10:13] == [0.0] * 3  # the gate was closed: no probability reported
    assert got[13:] == expected[13:]
    assert scorer.silero_windows_run == len(frames) * len(loud[0]) // (rate * 32 // 1000)


@pytest.mark.parametrize("rate", RATES)
def test_combined_restarts_silero_on_the_preroll_after_a_long_gap(rate: int) -> None:
    loud = frames_of(white_noise(rate, 0.2, -15), rate)
    scorer = CombinedScorer(rate, VadSettings(silero_preroll_ms=100), ScriptedGate())
    for frame in loud + [silence(rate)] * 8:
        scorer.evidence(frame)
    got = [scorer.evidence(frame).probability for frame in loud]
    fresh = _silero_trace([silence(rate)] * 5 + loud, rate)
    assert got == fresh[5:]
    assert got != _silero_trace(loud + [silence(rate)] * 8 + loud, rate)[18:]


def test_combined_without_preroll_restarts_after_any_closed_frame() -> None:
    loud = frames_of(white_noise(8000, 0.2, -15), 8000)
    scorer = CombinedScorer(8000, VadSettings(silero_preroll_ms=0), ScriptedGate())
    for frame in [*loud, silence(8000)]:
        scorer.evidence(frame)
    assert [scorer.evidence(frame).probability for frame in loud] == _silero_trace(loud, 8000)


def test_combined_checks_frames_before_holding_them() -> None:
    scorer = CombinedScorer(8000, VadSettings(), ScriptedGate())
    with pytest.raises(AudioFormatError, match="160 samples"):
        scorer.evidence(np.zeros(100, dtype=np.int16))


@pytest.mark.parametrize("rate", RATES)
def test_combined_marks_sound_only_when_gate_and_level_agree(rate: int) -> None:
    scorer = CombinedScorer(rate, VadSettings(), ScriptedGate())
    quiet_start = [scorer.evidence(silence(rate)).sound for _ in range(5)]
    loud = frames_of(white_noise(rate, 0.1, -20), rate)
    assert quiet_start == [False] * 5
    assert scorer.evidence(loud[0]).sound is True


def test_combined_confirms_real_speech() -> None:
    settings = VadSettings()
    audio = read_wav(HUMAN / "asterisk" / "please-try-again.wav").samples
    scorer = CombinedScorer(8000, settings)
    verdicts = [
        classify(scorer.evidence(f), settings.speech_threshold, settings.maybe_threshold)
        for f in frames_of(audio, 8000)
    ]
    assert verdicts.count(Verdict.SPEECH) > len(verdicts) // 2
    assert verdicts[0] is Verdict.SILENCE


def test_combined_refuses_bad_rates() -> None:
    with pytest.raises(AudioFormatError):
        CombinedScorer(44100, VadSettings())


def test_classify_applies_both_thresholds() -> None:
    assert classify(FrameEvidence(0.5), 0.5, 0.15) is Verdict.SPEECH
    assert classify(FrameEvidence(0.49), 0.5, 0.15) is Verdict.MAYBE
    assert classify(FrameEvidence(0.15), 0.5, 0.15) is Verdict.MAYBE
    assert classify(FrameEvidence(0.1), 0.5, 0.15) is Verdict.SILENCE
    assert classify(FrameEvidence(0.0, sound=True), 0.5, 0.15) is Verdict.SOUND
    assert classify(FrameEvidence(0.2, sound=True), 0.5, 0.15) is Verdict.MAYBE

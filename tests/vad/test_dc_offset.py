"""A DC offset under the speech neither hides it nor dates its onset late (vad/dc.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.vad.vad_kit import FIXTURES, onset_labels
from voicegate.audio.g711 import samples_to_ulaw_bytes, ulaw_bytes_to_samples
from voicegate.audio.resample import convert
from voicegate.audio.wav import read_wav
from voicegate.vad import VadSettings, detect_segments
from voicegate.vad.dc import DcRemover
from voicegate.vad.frames import level_dbfs

FULL_SCALE = 32768.0
LEAD_IN_MS = 500


def with_offset(samples: np.ndarray, rate: int, *, gain: float, offset: float) -> np.ndarray:
    """``LEAD_IN_MS`` of silence, then the samples scaled, all over a constant offset."""
    lead = np.zeros(rate * LEAD_IN_MS // 1000)
    shifted = np.concatenate([lead, samples * gain]) + offset * FULL_SCALE
    return np.clip(np.rint(shifted), -32768, 32767).astype(np.int16)


def test_a_frame_without_offset_passes_unchanged() -> None:
    remover = DcRemover(20)
    frame = np.array([3, -3, 100, -100] * 40, dtype=np.int16)
    assert remover.remove(frame) is frame


def test_the_measured_removal_gives_the_same_frames_and_levels_bit_for_bit() -> None:
    # remove_measured (the detector's path) takes the mean and the power from one float copy;
    # both must equal remove() and level_dbfs exactly, offsets shifted out or not.
    rng = np.random.default_rng(7)
    plain, measured = DcRemover(20), DcRemover(20)
    for _ in range(3000):
        offset = rng.choice([0, 0, 6, 40, 2500, -9000])
        spread = rng.choice([0, 3, 60, 3000, 30000])
        frame = np.clip(rng.normal(offset, spread, 160), -32768, 32767).astype(np.int16)
        expected = plain.remove(frame)
        got, level = measured.remove_measured(frame)
        assert np.array_equal(got, expected)
        assert level == level_dbfs(expected)


def test_a_steady_offset_is_taken_out_and_full_scale_is_kept() -> None:
    remover = DcRemover(20)
    tone = (8000 * np.sin(np.arange(160) * 2 * np.pi / 16)).astype(np.int16)
    for _ in range(50):
        out = remover.remove(tone - np.int16(9000))
    assert np.array_equal(out, tone)
    loud = remover.remove(np.full(160, 32767, dtype=np.int16))
    assert loud.dtype == np.int16
    assert loud.min() == 32767  # clipped, not wrapped round


def test_a_quiet_stream_with_a_codec_rounding_bias_is_left_alone() -> None:
    remover = DcRemover(20)
    frame = np.array([0, -8, -8, -8, -8] * 32, dtype=np.int16)  # μ-law's two lowest levels
    for _ in range(100):
        assert remover.remove(frame) is frame


def test_half_level_speech_over_a_large_offset_is_still_found_at_8khz() -> None:
    # Before vad/dc.py Silero found nothing here at 8 kHz (it did at 16 kHz).
    label = next(lab for lab in onset_labels() if "goforward" in lab.path)
    wide = read_wav(FIXTURES / label.path).samples
    narrow = convert(wide, 16000, 8000).astype(np.float64)
    offset = detect_segments(with_offset(narrow, 8000, gain=0.5, offset=0.3), 8000, VadSettings())
    plain = detect_segments(with_offset(narrow, 8000, gain=0.5, offset=0.0), 8000, VadSettings())
    assert len(plain) == 1
    assert offset == plain


@pytest.mark.parametrize("digit", range(10))
def test_quiet_speech_over_a_one_percent_offset_keeps_its_onset(digit: int) -> None:
    # Speech at -35 dBFS over 1 % of full scale: the level gate counted the offset as sound
    # and dated 6 of these 10 onsets 84-161 ms late (the acceptance bound is 60 ms).
    label = next(lab for lab in onset_labels() if lab.path.endswith(f"digit-{digit}.wav"))
    samples = read_wav(FIXTURES / label.path).samples.astype(np.float64)
    speech = samples[label.onset_ms * 8 : label.offset_ms * 8]
    gain = FULL_SCALE * 10 ** (-35 / 20) / np.sqrt(np.mean(speech**2))
    segments = detect_segments(
        with_offset(samples, 8000, gain=gain, offset=0.01), 8000, VadSettings()
    )
    assert len(segments) == 1
    assert abs(segments[0].start_ms - (label.onset_ms + LEAD_IN_MS)) <= 60


def test_quiet_mu_law_speech_is_not_shifted_out_of_detection() -> None:
    # Peak -45 dBFS through μ-law: the background decodes to 0 and -8 (a -2.8 LSB mean);
    # shifting it by 2 LSB lost this utterance in the combined scorer.
    label = next(lab for lab in onset_labels() if "goforward" in lab.path)
    wide = read_wav(FIXTURES / label.path).samples.astype(np.float64)
    quiet = np.rint(wide * FULL_SCALE * 10 ** (-45 / 20) / np.abs(wide).max()).astype(np.int16)
    narrow = ulaw_bytes_to_samples(samples_to_ulaw_bytes(convert(quiet, 16000, 8000)))
    segments = detect_segments(narrow, 8000, VadSettings())
    assert len(segments) == 1
    assert abs(segments[0].start_ms - label.onset_ms) <= 60

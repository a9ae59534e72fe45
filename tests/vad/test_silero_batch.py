"""Silero windows of many streams in one inference score exactly as each stream alone (issue 12)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.vad.vad_kit import HUMAN
from voicegate.audio.wav import read_wav
from voicegate.vad import CombinedScorer, Detector, SileroModel, SileroScorer, VadSettings
from voicegate.vad.frames import Frame, iter_frames
from voicegate.vad.silero_batch import score_together

RECORDINGS = [
    (HUMAN / "asterisk" / "digit-5.wav", 8000),
    (HUMAN / "asterisk" / "agent-pass.wav", 8000),
    (HUMAN / "alsa" / "Side_Left_8k.wav", 8000),
    (HUMAN / "pocketsphinx" / "cards-005_16k.wav", 16000),
    (HUMAN / "alsa" / "Side_Right_16k.wav", 16000),
]


@pytest.fixture(scope="module")
def model() -> SileroModel:
    return SileroModel()


def frames(path: object, rate: int, pad_s: float = 0.5) -> list[Frame]:
    samples = read_wav(path).samples  # type: ignore[arg-type]
    quiet = np.zeros(int(rate * pad_s), np.int16)
    return list(iter_frames(np.concatenate([quiet, samples, quiet]), rate // 50))


def trace(scorer: SileroScorer, stream: list[Frame]) -> list[float]:
    return [scorer.probability(f) for f in stream]


def test_batched_windows_score_as_each_stream_alone(model: SileroModel) -> None:
    streams = [frames(path, rate) for path, rate in RECORDINGS]
    alone = [
        trace(SileroScorer(rate, model=model), fs)
        for fs, (_, rate) in zip(streams, RECORDINGS, strict=True)
    ]
    batched = [SileroScorer(rate, model=model) for _, rate in RECORDINGS]
    traces: list[list[float]] = [[] for _ in RECORDINGS]
    for index in range(max(map(len, streams))):
        live = [i for i, fs in enumerate(streams) if index < len(fs)]
        for i in live:
            batched[i].feed(streams[i][index])
        score_together([batched[i] for i in live])
        for i in live:
            traces[i].append(batched[i].latest)
    for got, expected in zip(traces, alone, strict=True):
        assert got == pytest.approx(expected, abs=1e-5)
        assert max(got) > 0.5  # the recordings hold speech: the comparison is not all zeros


def test_a_stream_with_several_queued_windows_has_them_scored_in_order(
    model: SileroModel,
) -> None:
    long, short = frames(*RECORDINGS[1]), frames(*RECORDINGS[0])
    expected = trace(SileroScorer(8000, model=model), long)
    deep, shallow = SileroScorer(8000, model=model), SileroScorer(8000, model=model)
    for f in long[:20]:  # 400 ms: 12 windows queued before anything is scored
        deep.feed(f)
    shallow.feed(short[0])
    shallow.feed(short[1])
    assert len(deep.queued) == 12
    assert len(shallow.queued) == 1
    score_together([shallow, deep])
    assert deep.latest == pytest.approx(expected[19], abs=1e-5)
    assert deep.windows_run == 12
    assert not deep.queued
    assert shallow.latest == pytest.approx(trace(SileroScorer(8000, model=model), short[:2])[-1])


def test_batched_detectors_find_the_segments_each_finds_alone(model: SileroModel) -> None:
    settings = VadSettings()
    streams = [frames(path, rate, pad_s=1.0) for path, rate in RECORDINGS]

    def detector(rate: int) -> Detector:
        return Detector(CombinedScorer(rate, settings, model=model), settings)

    alone = []
    for fs, (_, rate) in zip(streams, RECORDINGS, strict=True):
        single = detector(rate)
        alone.append([event for f in fs for event in single.push(f)])
    detectors = [detector(rate) for _, rate in RECORDINGS]
    events: list[list[object]] = [[] for _ in RECORDINGS]
    for index in range(max(map(len, streams))):
        held = []
        for i, fs in enumerate(streams):
            if index < len(fs):
                stepped = detectors[i].prepare(fs[index])
                if stepped is None:
                    held.append(i)
                else:
                    events[i].extend(stepped)
        score_together([detectors[i].waiting for i in held])  # type: ignore[misc]
        for i in held:
            events[i].extend(detectors[i].resume())
    assert events == alone
    assert all(len(found) >= 2 for found in alone)  # each recording gives a start and an end


def test_a_lone_window_takes_the_single_stream_path(model: SileroModel) -> None:
    scorer = SileroScorer(16000, model=model)
    for f in frames(*RECORDINGS[3])[:2]:
        scorer.feed(f)
    score_together([scorer])
    score_together([])  # nothing queued anywhere: nothing to do
    assert scorer.windows_run == 1
    assert not scorer.queued

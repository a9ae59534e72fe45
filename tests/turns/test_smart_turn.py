"""The shipped Smart Turn v3.2 model and its features (voicegate/turns/smart_turn.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from voicegate.audio.pcm import Samples
from voicegate.audio.wav import read_wav
from voicegate.errors import ConfigError
from voicegate.turns.features import N_MELS, WINDOW_SAMPLES, last_window, log_mel, mel_filters
from voicegate.turns.smart_turn import CpuBudget, SmartTurnModel, bundled_model_path

AUDIO = Path(__file__).resolve().parents[2] / "fixtures" / "audio" / "human"


@pytest.fixture(scope="module")
def model() -> SmartTurnModel:
    loaded = SmartTurnModel(bundled_model_path())
    yield loaded  # type: ignore[misc]
    loaded.close()


def test_features_match_pipecats_smart_turn_features() -> None:
    # Golden values from pipecat-ai 1.14.0's compute_whisper_log_mel_features on this input.
    rng = np.random.default_rng(3)
    window = last_window((rng.standard_normal(16000) * 0.1).astype(np.float32))
    features = log_mel(window)
    assert len(window) == WINDOW_SAMPLES
    assert not window[: WINDOW_SAMPLES - 16000].any()  # padded at the start, audio at the end
    assert features.shape == (N_MELS, 800)
    assert features.dtype == np.float32
    assert float(features.mean()) == pytest.approx(-0.1806020438671112, abs=1e-6)
    assert float(features.std()) == pytest.approx(0.5807555913925171, abs=1e-6)
    assert features[5, -3:] == pytest.approx([1.370991, 1.399717, 1.531091], abs=1e-5)
    assert features[70, 700:703] == pytest.approx([1.371166, 1.346815, 1.313187], abs=1e-5)


def test_mel_filters_are_slaney_normalised_triangles() -> None:
    filters = mel_filters()
    assert filters.shape == (201, N_MELS)
    assert (filters >= 0).all()
    assert (filters.argmax(axis=0)[1:] >= filters.argmax(axis=0)[:-1]).all()


def test_a_finished_sentence_scores_complete_and_its_first_half_does_not(
    model: SmartTurnModel,
) -> None:
    wav = read_wav(AUDIO / "alsa" / "Rear_Center_16k.wav")
    whole = model.probability(wav.samples, wav.sample_rate)
    half = model.probability(wav.samples[: len(wav.samples) // 2], wav.sample_rate)
    assert whole > 0.5 > half


def test_8khz_audio_is_resampled_for_the_model(model: SmartTurnModel) -> None:
    wav = read_wav(AUDIO / "asterisk" / "one-moment-please.wav")
    assert wav.sample_rate == 8000
    future = model.submit(wav.samples, 8000)
    assert future is not None
    assert future.result(timeout=30) > 0.5


def test_a_busy_model_refuses_more_than_its_queue() -> None:
    loaded = SmartTurnModel(bundled_model_path(), workers=1, max_queue=1)
    try:
        audio = read_wav(AUDIO / "alsa" / "Rear_Center_16k.wav").samples
        # One runs (~90 ms of CPU), one waits: a third, asked at once, is shed.
        running, waiting = loaded.submit(audio, 16000), loaded.submit(audio, 16000)
        assert running is not None
        assert waiting is not None
        assert loaded.submit(audio, 16000) is None
        assert waiting.cancel()  # a pause that resumed: its place is free again at once
        assert loaded.pending == 1
        running.result(timeout=30)
        again = loaded.submit(audio, 16000)
        assert again is not None
        assert again.result(timeout=30) > 0.5
        assert loaded.pending == 0
    finally:
        loaded.close()


def test_cancelling_a_running_inference_stops_it_and_frees_its_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loaded = SmartTurnModel(bundled_model_path(), workers=1, max_queue=0)
    started, cancelled = threading.Event(), threading.Event()
    score = loaded.probability

    def held_at_its_start(samples: Samples, rate: int, options: ort.RunOptions | None) -> float:
        started.set()  # the inference is running: its future can no longer be cancelled
        cancelled.wait(30)
        return score(samples, rate, options)

    monkeypatch.setattr(loaded, "probability", held_at_its_start)
    try:
        audio = read_wav(AUDIO / "alsa" / "Rear_Center_16k.wav").samples
        running = loaded.submit(audio, 16000)
        assert running is not None
        assert started.wait(30)
        assert not running.cancel()  # it runs: a plain future would run on to the end
        cancelled.set()
        outcome = running.exception(timeout=30)
        assert outcome is not None
        assert "terminate" in str(outcome)
        assert loaded.pending == 0
        again = loaded.submit(audio, 16000)  # the thread is free for the next pause
        assert again is not None
        assert again.result(timeout=30) > 0.5
    finally:
        loaded.close()


def test_closing_the_model_cancels_inferences_still_waiting() -> None:
    loaded = SmartTurnModel(bundled_model_path(), workers=1, max_queue=1)
    audio = read_wav(AUDIO / "alsa" / "Rear_Center_16k.wav").samples
    running, waiting = loaded.submit(audio, 16000), loaded.submit(audio, 16000)
    assert running is not None
    assert waiting is not None
    loaded.close()
    assert waiting.cancelled()  # a poller of its future is not left waiting forever
    running.exception(timeout=30)  # stopped or finished, but done
    assert loaded.pending == 0


def test_a_file_that_is_not_the_shipped_model_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "smart-turn-v3.2-cpu.onnx"
    fake.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="not the Smart Turn"):
        SmartTurnModel(fake)
    with pytest.raises(ConfigError, match="not found"):
        SmartTurnModel(tmp_path / "missing.onnx")


def test_the_cpu_budget_sheds_past_its_share_and_refills() -> None:
    budget = CpuBudget(0.25)  # a quarter of a core, 0.25 s saved up at most
    assert budget.allows(0.0)
    budget.spend(0.3, 0.0)  # an expensive burst overdraws it
    assert not budget.allows(0.1)
    assert budget.allows(0.3)  # 0.3 s later it has earned 0.075 s back: positive again
    budget.spend(0.1, 0.3)
    assert not budget.allows(0.3)
    assert budget.allows(10.0)

"""The short Whisper encoder window (speech/embedded/whisper_window.py), on the real model.

The 45 human recordings already go through it in test_whisper_accuracy.py (the session's
recogniser has the default 10 s window); these tests pin what decides which window runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.speech.speech_kit import human_recordings
from tests.speech.wordscore import Score
from voicegate.audio.pcm import Samples
from voicegate.audio.resample import resample_all
from voicegate.audio.wav import read_wav
from voicegate.config.loader import parse_settings
from voicegate.errors import ConfigError, SpeechError
from voicegate.speech.embedded.whisper_model import WhisperOptions, WhisperRecognizer
from voicegate.speech.embedded.whisper_window import collapsed_words, loops

RATE = 16000


def _phrases(names: list[str]) -> tuple[Samples, str]:
    """Human recordings one after another with 300 ms gaps, as one utterance, and its label."""
    by_name = {recording.path.name: recording for recording in human_recordings()}
    parts, words = [], []
    for name in names:
        audio = read_wav(by_name[name].path)
        parts += [resample_all(audio.samples, audio.sample_rate, RATE), np.zeros(4800, np.int16)]
        words.append(by_name[name].transcript)
    return np.concatenate(parts).astype(np.int16), " ".join(words)


def test_a_phrase_repeated_three_times_running_is_a_loop() -> None:
    assert loops("7. 7. 7. 7")
    assert loops("Please repeat that. Please repeat that. Please repeat that.")
    assert loops("thank you goodbye thank you goodbye thank you goodbye")
    assert not loops("five five")
    assert not loops("Front, right. 10 of clubs. 7.")
    assert not loops("")


def test_a_loop_collapses_to_one_repetition_of_its_phrase() -> None:
    assert collapsed_words("0 0 0 0 0 0 0 0 0") == ["0"]
    assert collapsed_words("Goodbye. Goodbye. Goodbye.") == ["goodbye"]
    assert collapsed_words("thank you goodbye thank you goodbye") == ["thank", "you", "goodbye"]
    assert collapsed_words("Front, right. 10 of clubs.") == ["front", "right", "10", "of", "clubs"]


def test_a_looping_short_decode_is_retried_on_a_longer_short_window(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first 60 % of "zero" on the phone path: the 10 s window loops on it ("0 0 0 ..."),
    # as a pause decode of a live call can (docs/turn-taking.md).
    audio = read_wav(
        Path(__file__).resolve().parents[2] / "fixtures/audio/human/asterisk/digit-0.wav"
    )
    cut = audio.samples[: len(audio.samples) * 6 // 10]
    short = recognizer._short
    assert short is not None
    as_16k = resample_all(cut, audio.sample_rate, RATE).astype(np.float32) / 32768
    first, _ = short._generate(as_16k, 10.0)
    assert loops(first), first  # the case this test is about

    def no_full_decode(audio: object) -> str:
        raise AssertionError("the full 30 s window was decoded")

    monkeypatch.setattr(recognizer, "_decode_full", no_full_decode)
    assert collapsed_words(recognizer.transcribe(cut, audio.sample_rate)) == ["0"]


def test_a_retry_that_disagrees_with_the_loop_goes_to_the_full_window(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = recognizer._short
    assert short is not None
    answers = iter([("no no no no", False), ("yes", False)])  # the retry hears other words
    monkeypatch.setattr(short, "_generate", lambda audio, window_s: next(answers))
    monkeypatch.setattr(recognizer, "_decode_full", lambda audio: "full window")
    assert recognizer.transcribe(np.ones(RATE, dtype=np.int16) * 1000, RATE) == "full window"


def test_several_phrases_in_one_short_window_are_all_heard(
    recognizer: WhisperRecognizer,
) -> None:
    names = ["cards-001_16k.wav", "goforward_16k.wav", "all-circuits-busy-now.wav"]
    samples, label = _phrases(names)
    assert len(samples) < 7 * RATE  # fits the 10 s window with 3 s of silence to spare
    score = Score().add(label, recognizer.transcribe(samples, RATE))
    assert score.accuracy >= 0.8, (label, score)


def test_an_utterance_too_long_for_the_short_window_is_decoded_whole(
    recognizer: WhisperRecognizer,
) -> None:
    names = ["check-number-dial-again.wav", "cannot-complete-as-dialed.wav", "agent-pass.wav"]
    samples, label = _phrases(names)
    assert len(samples) > 7 * RATE
    score = Score().add(label, recognizer.transcribe(samples, RATE))
    assert score.accuracy >= 0.8, (label, score)


def test_an_untrusted_short_decode_is_redone_on_the_full_window(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples, label = _phrases(["agent-pass.wav"])
    short = recognizer._short
    assert short is not None
    monkeypatch.setattr(short, "decode", lambda audio: None)  # as for a looping decode
    score = Score().add(label, recognizer.transcribe(samples, RATE))
    assert score.accuracy >= 0.8, (label, score)


def test_the_window_leaves_room_for_trailing_silence_and_fits_whisper() -> None:
    with pytest.raises(SpeechError, match="window"):
        WhisperOptions(window_s=3)
    with pytest.raises(SpeechError, match="window"):
        WhisperOptions(window_s=31)
    with pytest.raises(ConfigError, match="whisper_window_s"):
        parse_settings("speech:\n  whisper_window_s: 2\n")
    assert parse_settings("speech:\n  whisper_window_s: 30\n").speech.whisper_window_s == 30

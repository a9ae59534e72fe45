"""The remote speech specs (cli/engines.py): keys come from the environment passed in."""

from __future__ import annotations

import pytest

from voicegate.cli import engines
from voicegate.errors import ConfigError
from voicegate.speech.remote.deepgram_stt import DeepgramSpeechToText
from voicegate.speech.remote.openai_tts import OpenAITextToSpeech


def test_deepgram_spec_needs_its_key() -> None:
    stt = engines.build_stt("deepgram:nova-3", {"DEEPGRAM_API_KEY": "k"})
    assert isinstance(stt, DeepgramSpeechToText)
    with pytest.raises(ConfigError, match="DEEPGRAM_API_KEY"):
        engines.build_stt("deepgram", {})


def test_openai_tts_spec_voice_and_base_url() -> None:
    tts = engines.build_tts("openai-tts:echo@http://127.0.0.1:8000/v1", 8000, {})
    assert isinstance(tts, OpenAITextToSpeech)
    assert tts.sample_rate == 8000
    assert tts.url == "http://127.0.0.1:8000/v1/audio/speech"
    default = engines.build_tts("openai-tts", 16000, {"OPENAI_API_KEY": "k"})
    assert isinstance(default, OpenAITextToSpeech)
    assert default.url == "https://api.openai.com/v1/audio/speech"


def test_openai_tts_spec_without_base_url_needs_the_key() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        engines.build_tts("openai-tts:alloy", 16000, {})


def test_openai_tts_spec_refuses_an_unsupported_rate() -> None:
    with pytest.raises(ConfigError, match=r"speech\.tts: openai-tts"):
        engines.build_tts("openai-tts", 44100, {"OPENAI_API_KEY": "k"})

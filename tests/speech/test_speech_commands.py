"""`voicegate say` and `voicegate transcribe`, and the engine specs of config/voicegate.yml."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.audio.stereo_kit import tone, write_channels
from tests.speech.speech_kit import HUMAN
from tests.speech.wordscore import normalise
from voicegate.audio.wav import read_wav, write_wav
from voicegate.cli import engines, wiring
from voicegate.cli.main import main
from voicegate.config import settings_from_data
from voicegate.errors import ConfigError
from voicegate.speech.embedded.espeak_tts import EspeakTextToSpeech
from voicegate.speech.embedded.whisper_stt import WhisperSpeechToText


def test_say_writes_the_speech_at_the_asked_rate(tmp_path: Path) -> None:
    out = tmp_path / "reply.wav"
    assert main(["say", "Thank you for calling. Goodbye!", "-o", str(out), "--rate", "8000"]) == 0
    audio = read_wav(out)
    assert audio.sample_rate == 8000
    assert 1000 < audio.duration_ms < 4000


def test_transcribe_prints_the_words_of_a_recording_through_the_phone_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = read_wav(HUMAN / "pocketsphinx" / "goforward_16k.wav")
    resampled = tmp_path / "goforward_48k.wav"  # any rate: 48 kHz in, 8 kHz μ-law on the way
    write_wav(resampled, recording.samples.repeat(3), 48000)
    assert main(["transcribe", str(resampled), "--telephone"]) == 0
    assert normalise(capsys.readouterr().out) == ["go", "forward", "ten", "meters"]


def test_transcribe_reads_an_odd_rate_and_refuses_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = read_wav(HUMAN / "asterisk" / "please-try-again.wav")
    odd = tmp_path / "please_11k.wav"
    write_wav(odd, recording.samples, 11025)  # played slower: still words, at a rate soxr takes
    assert main(["transcribe", str(odd)]) == 0
    assert capsys.readouterr().out.strip()
    assert main(["transcribe", str(tmp_path / "missing.wav")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_transcribe_hears_only_the_chosen_channel_of_a_call_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = read_wav(HUMAN / "pocketsphinx" / "goforward_16k.wav").samples
    call = tmp_path / "call.wav"
    write_channels(call, 16000, words, tone(len(words), 16000, hz=1000, level=20000))
    assert main(["transcribe", str(call), "--channel", "1"]) == 0
    assert normalise(capsys.readouterr().out) == ["go", "forward", "ten", "meters"]
    assert main(["transcribe", str(call), "--channel", "right", "--telephone"]) == 0
    assert "forward" not in normalise(capsys.readouterr().out)
    assert main(["transcribe", str(call), "--channel", "3"]) == 1
    assert "no channel 3 in a file of 2 channel(s)" in capsys.readouterr().err


def test_transcribe_decodes_only_speech_and_invents_nothing_for_silence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = read_wav(HUMAN / "pocketsphinx" / "goforward_16k.wav").samples
    silent = tmp_path / "silence.wav"
    write_wav(silent, np.zeros(10 * 16000, dtype=np.int16), 16000)
    assert main(["transcribe", str(silent)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "\n"  # Whisper alone heard "you" in it
    assert captured.err == f"voicegate transcribe: note: {silent}: no speech found\n"
    late = tmp_path / "late.wav"  # a caller who waits 30 s on hold before speaking
    write_wav(late, np.concatenate([np.zeros(30 * 16000, dtype=np.int16), words]), 16000)
    assert main(["transcribe", str(late)]) == 0
    assert normalise(capsys.readouterr().out) == ["go", "forward", "ten", "meters"]


def test_say_refuses_an_unknown_voice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["say", "hello", "-o", str(tmp_path / "x.wav"), "--voice", "xx-nowhere"]) == 1
    assert "no voice named 'xx-nowhere'" in capsys.readouterr().err


def test_the_embedded_engine_specs_build_the_embedded_engines() -> None:
    assert isinstance(engines.build_tts("espeak", 16000), EspeakTextToSpeech)
    assert engines.build_tts("espeak:en-us", 8000).sample_rate == 8000
    stt = engines.build_stt("whisper:tiny.en")
    assert isinstance(stt, WhisperSpeechToText)
    stt.close()


@pytest.mark.parametrize(
    ("speech", "barge_in", "end_of_turn", "interim_ms"),
    [
        ({}, {}, {}, 0),  # shipped: no decision reads an interim (the pause decode serves)
        ({}, {"min_words": 2}, {}, 500),  # the barge-in rule counts interim words
        ({}, {}, {"model": "none"}, 500),  # no pause decode: an interim may make the final
        ({"interim_ms": 250}, {}, {}, 250),
        ({"interim_ms": 0}, {"min_words": 2}, {}, 0),
    ],
)
def test_whisper_decodes_interims_only_where_a_decision_reads_them(
    speech: dict[str, int],
    barge_in: dict[str, int],
    end_of_turn: dict[str, str],
    interim_ms: int,
) -> None:
    data = {"speech": speech, "barge_in": barge_in, "turns": {"end_of_turn": end_of_turn}}
    assert wiring.whisper_interim_ms(settings_from_data(data)) == interim_ms


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("whisper:/nowhere/model", "not a CTranslate2 Whisper model"),
        ("vosk", "unknown engine 'vosk'"),
    ],
)
def test_a_bad_stt_spec_is_a_config_error(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        engines.build_stt(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [("espeak:xx-nowhere", "no voice named"), ("festival", "unknown engine 'festival'")],
)
def test_a_bad_tts_spec_is_a_config_error(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        engines.build_tts(spec, 16000)

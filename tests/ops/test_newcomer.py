"""Newcomer defects of issue 18: output paths checked up front, clear messages."""

from __future__ import annotations

import wave
from pathlib import Path

import pytest

from voicegate.audio.wav import read_wav
from voicegate.cli.main import build_parser, main
from voicegate.engine.llm.script import load_script
from voicegate.errors import AudioFormatError


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("missing/out.wav", "does not exist"),
        (".", "is a directory"),
        ("out.mp3", "only .wav files"),
    ],
)
def test_say_checks_its_output_before_synthesising(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, expected: str
) -> None:
    assert main(["say", "hello", "-o", str(tmp_path / name)]) == 1
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err


def test_say_nothing_names_the_command_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["say", "", "-o", "x.wav"]) == 1
    assert capsys.readouterr().err == "voicegate say: nothing to say (TEXT is empty)\n"


def test_replay_refuses_an_out_that_is_a_file_before_the_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "taken"
    taken.write_text("x")
    recording = Path(__file__).resolve().parents[2] / "fixtures/audio/synth/festival/balance_8k.wav"
    assert main(["replay", str(recording), "--out", str(taken)]) == 1
    assert "is not a directory" in capsys.readouterr().err


def test_an_empty_wav_says_what_is_wrong(tmp_path: Path) -> None:
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(AudioFormatError, match=r"not a readable WAV file \(empty or cut short\)"):
        read_wav(empty)
    with wave.open(str(tmp_path / "ok.wav"), "wb") as writer:  # a header alone is fine
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
    assert len(read_wav(tmp_path / "ok.wav").samples) == 0


def test_the_example_script_takes_its_own_caller_lines_and_shows_patterns_as_written() -> None:
    root = Path(__file__).resolve().parents[2]
    script = load_script(root / "examples/bank_balance/conversation.yml")
    last = script.turns[-1]
    assert last.matches("thank you goodbye")
    assert last.expectation() == "user_matches: /\\b(no|bye|goodbye|thanks|thank you)\\b/"


def test_the_command_list_matches_the_command_modules() -> None:
    assert build_parser("").format_help() == build_parser().format_help()

"""`voicegate vad`: text and JSON output, scorer choice, and clear refusals."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.audio.stereo_kit import write_channels
from tests.vad.vad_kit import FIXTURES, HUMAN
from voicegate.audio.resample import StreamResampler
from voicegate.audio.wav import read_wav, write_wav
from voicegate.cli.main import main

DIGIT = HUMAN / "asterisk" / "digit-4.wav"
NOISE = HUMAN / "alsa" / "Noise_8k.wav"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["vad", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_output_lists_the_segments(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([str(DIGIT)], capsys)
    _, json_out, _ = run([str(DIGIT), "--json"], capsys)
    (segment,) = json.loads(json_out)["segments"]
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == f"{DIGIT}: 8000 Hz, 801 ms, scorer combined, 1 speech segment(s)"
    assert lines[1].split() == [
        "1",
        str(segment["start_ms"]),
        "ms",
        "->",
        str(segment["end_ms"]),
        "ms",
        f"({segment['end_ms'] - segment['start_ms']}",
        "ms)",
    ]


def test_webrtc_alone_calls_the_noise_speech(capsys: pytest.CaptureFixture[str]) -> None:
    # Why the default combines scorers (fixtures/audio/README.md).
    _, out, _ = run([str(NOISE), "--json", "--scorer", "webrtc", "--aggressiveness", "3"], capsys)
    assert len(json.loads(out)["segments"]) == 1
    _, out, _ = run([str(NOISE), "--json", "--scorer", "silero"], capsys)
    assert json.loads(out)["segments"] == []


@pytest.mark.parametrize("rate", [24000, 48000])
def test_wideband_files_are_resampled_to_16k(
    rate: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = HUMAN / "pocketsphinx" / "goforward_16k.wav"
    audio = read_wav(source)
    upsampler = StreamResampler(16000, rate)
    upsampled = np.concatenate([upsampler.push(audio.samples), upsampler.flush()])
    write_wav(tmp_path / "wide.wav", upsampled[upsampler.delay_samples :], rate)
    _, native, _ = run([str(source), "--json"], capsys)
    _, wide, _ = run([str(tmp_path / "wide.wav"), "--json"], capsys)
    (native_segment,) = json.loads(native)["segments"]
    (wide_segment,) = json.loads(wide)["segments"]
    assert abs(wide_segment["start_ms"] - native_segment["start_ms"]) <= 20
    _, text, _ = run([str(tmp_path / "wide.wav")], capsys)
    assert f"{rate} Hz (resampled to 16000 Hz)" in text


def test_a_cd_rate_file_is_analysed_like_transcribe_and_replay_take_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_wav(tmp_path / "cd.wav", np.zeros(4410, dtype=np.int16), 44100)
    code, out, _ = run([str(tmp_path / "cd.wav"), "--json"], capsys)
    assert code == 0
    assert json.loads(out)["segments"] == []


def test_a_missing_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([str(FIXTURES / "nope.wav")], capsys)
    assert (code, out) == (1, "")
    assert "nope.wav: no such file" in err


def test_a_stereo_file_is_analysed_as_its_mix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with wave.open(str(tmp_path / "stereo.wav"), "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(bytes(3200))
    code, out, _ = run([str(tmp_path / "stereo.wav")], capsys)
    assert code == 0
    assert "8000 Hz, 100 ms" in out
    assert "0 speech segment(s)" in out


def test_channel_picks_the_voice_of_a_dual_channel_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    digit = read_wav(DIGIT).samples
    write_channels(tmp_path / "call.wav", 8000, np.zeros(len(digit), dtype=np.int16), digit)
    _, alone, _ = run([str(DIGIT), "--json"], capsys)
    code, right, _ = run([str(tmp_path / "call.wav"), "--json", "--channel", "2"], capsys)
    assert code == 0
    assert json.loads(right) == json.loads(alone)
    assert len(json.loads(alone)["segments"]) == 1
    _, left, _ = run([str(tmp_path / "call.wav"), "--json", "--channel", "left"], capsys)
    assert json.loads(left)["segments"] == []
    code, out, err = run([str(tmp_path / "call.wav"), "--channel", "3"], capsys)
    assert (code, out) == (1, "")
    assert "call.wav: no channel 3 in a file of 2 channel(s): choose 1 to 2, or mix" in err


@pytest.mark.parametrize(
    "bad", [["--aggressiveness", "4"], ["--scorer", "energy"], ["--channel", "0"]]
)
def test_bad_options_are_usage_errors(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["vad", str(DIGIT), *bad])
    assert exit_info.value.code == 2


def test_a_file_without_audio_is_refused_not_analysed_as_silence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "header_only.wav"
    write_wav(empty, np.zeros(0, dtype=np.int16), 8000)
    code, out, err = run([str(empty), "--json"], capsys)
    assert (code, out) == (1, "")
    assert "0 ms of audio (0 at 8000 Hz), less than one 20 ms frame: nothing to analyse" in err


def test_a_file_cut_short_is_analysed_with_a_note_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content = DIGIT.read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(content[: len(content) // 2])  # a recorder killed mid-file
    code, out, err = run([str(cut), "--json"], capsys)
    assert code == 0
    assert "segments" in json.loads(out)  # stdout stays JSON
    assert err.startswith(f"voicegate vad: note: {cut}: the file is cut short: its header ")


def test_the_raw_and_twilio_recordings_replay_takes_are_analysed_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = FIXTURES.parent / "wire" / "twilio"
    raw, jsonl = wire / "festival_balance_8k.ulaw", wire / "festival_balance.twilio.jsonl"
    raw_code, raw_out, _ = run([str(raw), "--json"], capsys)
    jsonl_code, jsonl_out, _ = run([str(jsonl), "--json"], capsys)
    assert (raw_code, jsonl_code) == (0, 0)
    assert json.loads(raw_out)["segments"]  # "check my balance", read as μ-law at 8 kHz
    assert json.loads(jsonl_out) == json.loads(raw_out)  # the same audio, as media messages
    empty = tmp_path / "empty.ulaw"
    empty.write_bytes(b"")
    code, _, err = run([str(empty)], capsys)
    assert code == 1
    assert "less than one 20 ms frame: nothing to analyse" in err

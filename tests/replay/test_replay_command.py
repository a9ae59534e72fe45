"""``voicegate replay`` end to end, through ``main([...])``, against the demo project.

The demo (config/agent) runs with fixtures/config/deterministic.yml: the scripted model, the
scripted recogniser ("check my balance" first) and the tone synthesiser, so every run gives
the same events; one test runs the shipped defaults (embedded Whisper and espeak-ng). The
demo's tool awaits a 1.5 s backend on the wall clock, which ``--tail-ms`` covers
(docs/replay.md).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.audio.stereo_kit import tone, write_channels
from tests.replay.replay_kit import (
    AUDIO,
    CALLS,
    ROOT,
    WIRE,
    events,
    loud_ms,
    read_call_wav,
    read_jsonl,
)
from voicegate.audio.g711 import ulaw_decode, ulaw_encode
from voicegate.audio.wav import read_wav, write_wav
from voicegate.callers.inputs import load_recording
from voicegate.callers.scenario import load_scenario
from voicegate.cli import wiring
from voicegate.cli.main import main
from voicegate.cli.replaying import scenario_settings
from voicegate.config import ServerSettings
from voicegate.gateway.lifecycle import Gateway

DEMO_ANSWER = "Your balance is 1250.75 dollars. Anything else?"
FAST = ["--speed", "max", "--tail-ms", "2000"]  # virtual time: the same call at any speed


@pytest.fixture(autouse=True)
def in_repository_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default settings file and the demo's paths are relative to the repository root."""
    monkeypatch.chdir(ROOT)


DETERMINISTIC = ROOT / "fixtures" / "config" / "deterministic.yml"


def replay(*argv: str) -> int:
    """``voicegate replay`` with the deterministic settings."""
    return main(["replay", *argv, "--config", str(DETERMINISTIC)])


def check_demo_call(out: Path, sample_rate: int) -> list[dict[str, object]]:
    """The files of a replayed demo call: both channels, and a full answered turn."""
    wav = read_call_wav(out / "call.wav")
    assert (wav.channels, wav.sample_rate) == (2, sample_rate)
    assert loud_ms(wav.caller, sample_rate) > 500  # "check my balance"
    assert loud_ms(wav.bot, sample_rate) > 5000  # the answer, about 9 s of tone at 60 ms/char
    timeline = read_jsonl(out / "timeline.jsonl")
    names = events(timeline)
    for event in ("call_started", "speech_started", "speech_ended", "turn_started", "say"):
        assert event in names
    for event in ("tool_started", "tool_finished", "mark_played", "heard", "turn_ended"):
        assert event in names
    assert names.index("speech_ended") < names.index("turn_started") < names.index("say")
    assert [r["t_ms"] for r in timeline] == sorted(r["t_ms"] for r in timeline)
    turn = next(r for r in timeline if r["event"] == "turn_started")
    assert turn["input"] == {"text": "check my balance"}
    heard = next(r for r in timeline if r["event"] == "heard")
    assert heard["text"].endswith(DEMO_ANSWER)
    assert not heard["interrupted"]
    return timeline


def test_a_16khz_wav_replays_as_a_twilio_caller(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = AUDIO / "synth" / "festival" / "balance_16k.wav"
    assert load_recording(source).sample_rate == 16000
    report = ["--report", str(tmp_path / "call.html")]
    argv = [str(source), "--provider", "twilio", "--out", str(tmp_path), *FAST, *report]
    assert replay(*argv) == 0
    timeline = check_demo_call(tmp_path, 8000)
    call_id = timeline[0]["call_id"]  # fresh for every replay, so replays never collide
    assert call_id.startswith("CA")
    assert len(call_id) == 34
    printed = capsys.readouterr().out
    assert call_id in printed
    assert "turns: 1   interruptions: 0" in printed
    assert " ms: 'check my balance'" in printed  # the recogniser's final transcript
    assert f"wrote {tmp_path / 'call.html'}" in printed
    assert "Your balance is 1250.75 dollars." in (tmp_path / "call.html").read_text("utf-8")
    assert DEMO_ANSWER in printed
    assert str(tmp_path / "call.wav") in printed
    caller_side = events(read_jsonl(tmp_path / "caller.jsonl"))
    assert caller_side[0] == "stream_opened"
    assert "bot_audio_started" in caller_side
    assert "mark_echoed" in caller_side


def test_a_recording_longer_than_the_call_says_what_was_not_streamed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_call = tmp_path / "long.wav"
    write_wav(long_call, np.zeros(8000 * 5, dtype=np.int16), 8000)
    assert replay(str(long_call), "--out", str(tmp_path), *FAST, "--max-ms", "2000") == 0
    assert (
        "note: the call stopped at --max-ms 2000: the last 3000 ms of the 5000 ms recording "
        "were not streamed; raise --max-ms"
    ) in capsys.readouterr().out


def test_a_recording_longer_than_a_minute_plays_whole_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = read_wav(AUDIO / "synth" / "festival" / "balance_8k.wav").samples
    late = tmp_path / "late.wav"  # the caller speaks after 65 s on hold (60 s was the bound)
    write_wav(late, np.concatenate([np.zeros(8000 * 65, dtype=np.int16), words]), 8000)
    assert replay(str(late), "--out", str(tmp_path), *FAST) == 0
    printed = capsys.readouterr().out
    assert "turns: 1   interruptions: 0" in printed
    assert "not streamed" not in printed


def test_conversationrelay_recognises_an_unlabelled_recording_instead_of_inventing_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unlabelled = tmp_path / "mine.wav"  # no transcripts.tsv names it: the caller said 'hello'
    unlabelled.write_bytes((AUDIO / "synth" / "festival" / "balance_8k.wav").read_bytes())
    argv = [str(unlabelled), "--provider", "conversationrelay", "--out", str(tmp_path), *FAST]
    assert replay(*argv) == 0
    assert "note: no transcripts.tsv names what the caller says: recognised 'Check my balance" in (
        capsys.readouterr().out
    )
    turn = next(r for r in read_jsonl(tmp_path / "timeline.jsonl") if r["event"] == "turn_started")
    assert turn["input"]["text"].lower().startswith("check my balance")


def test_raw_ulaw_replays(tmp_path: Path) -> None:
    source = WIRE / "twilio" / "festival_balance_8k.ulaw"
    assert replay(str(source), "--out", str(tmp_path), *FAST) == 0
    check_demo_call(tmp_path, 8000)


def test_a_twilio_jsonl_recording_replays_as_the_recorded_call(tmp_path: Path) -> None:
    source = WIRE / "twilio" / "festival_balance.twilio.jsonl"
    assert replay(str(source), "--provider", "twilio", "--out", str(tmp_path), *FAST) == 0
    timeline = check_demo_call(tmp_path, 8000)
    # The callSid of the recording's start message is the call's id.
    assert timeline[0]["call_id"] == "CA00000000000000000000000000000001"
    wav = read_call_wav(tmp_path / "call.wav")
    recorded = load_recording(WIRE / "twilio" / "festival_balance_8k.ulaw").samples
    # The caller channel starts with exactly the recorded payloads (μ-law round trip is exact).
    assert (wav.caller[: len(recorded)] == recorded).all()


def test_one_channel_of_a_dual_channel_recording_is_the_caller(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    speech = read_wav(AUDIO / "synth" / "festival" / "balance_8k.wav").samples
    source = tmp_path / "dual.wav"  # the caller on the left, an agent's loud tone on the right
    write_channels(source, 8000, speech, tone(len(speech), 8000, level=20000))
    out = tmp_path / "out"
    # Hang up once the recording has been sent: the answer is not what this test is about.
    until = ["--max-ms", str(len(speech) // 8 + 100)]
    assert replay(str(source), "--channel", "1", "--out", str(out), *FAST, *until) == 0
    # The caller sent exactly the left channel (μ-law coded on the way), none of the tone.
    sent = read_call_wav(out / "call.wav").caller[: len(speech)]
    assert np.array_equal(sent, ulaw_decode(ulaw_encode(speech)))
    assert "averaged to mono" not in capsys.readouterr().out
    assert replay(str(source), "--channel", "3", "--out", str(out)) == 1
    assert "dual.wav: no channel 3 in a file of 2 channel(s)" in capsys.readouterr().err
    scenario = str(CALLS / "bargein_while_speaking.yml")
    assert replay(scenario, "--channel", "2") == 1
    assert "cues name their own channel (channel:); drop --channel" in capsys.readouterr().err


def test_the_browser_dialect_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = AUDIO / "synth" / "festival" / "balance_16k.wav"
    assert replay(str(source), "--provider", "browser", "--out", str(tmp_path), *FAST) == 0
    timeline = check_demo_call(tmp_path, 16000)
    call_id = timeline[0]["call_id"]
    assert str(call_id).startswith("browser-")  # the id the gateway announced in `started`
    assert f"browser caller (call {call_id})" in capsys.readouterr().out
    caller_side = read_jsonl(tmp_path / "caller.jsonl")
    accepted = next(r for r in caller_side if r["event"] == "call_accepted")
    assert accepted["sample_rate"] == 16000
    assert accepted["call_id"] == call_id


def test_a_bad_input_is_refused_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello", encoding="utf-8")
    assert replay(str(text), "--out", str(tmp_path / "out")) == 1
    assert "cannot tell the format" in capsys.readouterr().err
    assert replay(str(tmp_path / "missing.wav")) == 1
    assert "no such file" in capsys.readouterr().err
    assert replay(str(text), "--speed", "0") == 1
    assert "--speed" in capsys.readouterr().err
    assert replay(str(text), "--report", str(tmp_path / "report.pdf")) == 1
    assert "only .html or .png files" in capsys.readouterr().err
    wav = str(AUDIO / "synth" / "festival" / "yes_8k.wav")
    for gain in ("nan", "inf"):  # NaN echo samples would reach the gateway as garbage
        assert replay(wav, "--echo-delay-ms", "100", "--echo-gain-db", gain) == 1
        assert "--echo-gain-db must be a finite number of dB" in capsys.readouterr().err
    assert replay(wav, "--url", "http://127.0.0.1:1") == 1
    assert "is not a ws:// or wss:// URL" in capsys.readouterr().err
    assert replay(wav, "--url", "ws://127.0.0.1:1", "--out", str(tmp_path / "out")) == 1
    assert "cannot stream to ws://127.0.0.1:1/twilio" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


async def test_with_url_the_caller_side_timeline_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = load_scenario(CALLS / "bargein_while_speaking.yml")
    settings = scenario_settings(scenario, tmp_path / "gateway")
    settings = replace(settings, server=ServerSettings(host="127.0.0.1", port=0))
    # The gateway takes audio at the replay's speed 4 (limits.media_max_speed, issue 15).
    settings = replace(settings, limits=replace(settings.limits, media_max_speed=4.0))
    runner = wiring.build_runner(settings)
    out = tmp_path / "out"
    async with Gateway(runner, settings.gateway_options()) as gateway:
        url = "ws" + gateway.base_url.removeprefix("http")  # no path: the provider's is added
        argv = [str(scenario.path), "--url", url, "--speed", "4", "--out", str(out)]
        assert await asyncio.to_thread(replay, *argv) == 0
    printed = capsys.readouterr().out
    assert "not available over the wire" in printed
    assert not (out / "caller.jsonl").exists()
    observed = read_jsonl(out / "timeline.jsonl")
    names = events(observed)
    assert names[0] == "stream_opened"
    assert names[-1] == "stream_closed"
    assert observed[-1]["close_code"] == 1000
    # What the caller saw matches what the gateway did, seen from the other end.
    gateway_side = runner.timeline(observed[0]["call_id"])
    assert gateway_side is not None
    assert names.count("clear_received") == len(gateway_side.named("flush_sent")) == 1
    assert names.count("mark_echoed") == len(gateway_side.named("mark_played"))
    assert "clear at" in printed
    wav = read_call_wav(out / "call.wav")
    assert (wav.channels, wav.sample_rate) == (2, 8000)
    assert loud_ms(wav.bot, 8000) > 1000


def test_the_shipped_defaults_answer_a_recorded_caller_with_real_speech(tmp_path: Path) -> None:
    """config/voicegate.yml as shipped: Whisper hears the caller, espeak-ng speaks the answer."""
    source = AUDIO / "synth" / "festival" / "balance_16k.wav"
    out = tmp_path / "out"
    argv = [str(source), "--provider", "twilio", "--out", str(out), "--speed", "max"]
    assert main(["replay", *argv, "--tail-ms", "3000"]) == 0
    wav = read_call_wav(out / "call.wav")
    assert loud_ms(wav.bot, 8000) > 2000  # spoken answers, not a tone: espeak's speech
    timeline = read_jsonl(out / "timeline.jsonl")
    final = next(r for r in timeline if r["event"] == "transcript" and r["final"])
    assert "balance" in final["text"].lower()
    heard = next(r for r in timeline if r["event"] == "heard")
    assert heard["text"].endswith(DEMO_ANSWER)


def test_the_echo_loopback_feeds_the_bot_back_to_the_gateway(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(WIRE / "twilio" / "festival_balance_8k.ulaw")
    echo = ["--echo-delay-ms", "150", "--echo-gain-db", "-20"]
    assert replay(source, "--out", str(tmp_path), *FAST, *echo) == 0
    timeline = check_demo_call(tmp_path, 8000)  # the bot was not interrupted by itself
    assert "interruption" not in events(timeline)
    wav = read_call_wav(tmp_path / "call.wav")
    echoed = loud_ms(wav.caller, 8000, threshold=100)  # the quiet tone, 20 dB down
    assert echoed > loud_ms(wav.bot, 8000) // 2
    assert replay(source, "--echo-delay-ms", "-1") == 1
    assert "--echo-delay-ms" in capsys.readouterr().err

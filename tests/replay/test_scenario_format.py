"""Scenario files: what loads, what is refused, and how expectations are judged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.audio.stereo_kit import tone, write_channels
from tests.replay.replay_kit import CALLS
from voicegate.audio.wav import read_wav
from voicegate.callers.expect import unmet
from voicegate.callers.scenario import load_scenario, scenario_paths
from voicegate.errors import ConfigError

HEAD = """
provider: twilio
project: {root}/fixtures/projects/slow_bank
llm: conversation.yml
"""
CUE = """
caller:
  - audio: {root}/fixtures/audio/synth/festival/balance_8k.wav
    at_ms: 300
"""


def write(tmp_path: Path, text: str) -> Path:
    root = CALLS.parents[1]
    path = tmp_path / "case.yml"
    path.write_text(text.replace("{root}", str(root)), encoding="utf-8")
    return path


def test_every_fixture_scenario_loads() -> None:
    for path in scenario_paths(CALLS):
        scenario = load_scenario(path)
        assert scenario.cues
        assert scenario.llm.is_file()
        assert scenario.description


def test_a_scenario_names_transcripts_and_onsets_from_the_labels() -> None:
    scenario = load_scenario(CALLS / "bargein_while_speaking.yml")
    assert scenario.transcripts() == ["check my balance", "please try again"]
    assert [cue.onset_ms for cue in scenario.cues] == [None, 93]
    second = scenario.cues[1]
    assert (second.after_bot_speech, second.delay_ms) == (1, 800)
    noise = load_scenario(CALLS / "noise_while_speaking.yml")
    assert noise.transcripts() == ["check my balance"]  # noise is never recognised


def test_the_caller_script_is_at_the_asked_rate() -> None:
    scenario = load_scenario(CALLS / "bargein_while_thinking.yml")
    script = scenario.caller_script(16000)
    assert script.sample_rate == 16000
    assert len(script.cues[0].samples) == 2 * 10200  # 1275 ms at 16 kHz
    assert script.cues[1].transcript == "please try again"


def test_a_cue_can_play_one_channel_of_a_call_recording(tmp_path: Path) -> None:
    caller = read_wav(CALLS.parent / "audio" / "synth" / "festival" / "yes_8k.wav").samples
    write_channels(tmp_path / "call.wav", 8000, tone(len(caller), 8000), caller)
    cue = "caller:\n  - {audio: call.wav, at_ms: 0, transcript: 'yes', channel: CHANNEL}\n"
    for channel, expected in (("right", caller), ("mix", None)):
        scenario = load_scenario(write(tmp_path, HEAD + cue.replace("CHANNEL", channel)))
        samples = scenario.caller_script(8000).cues[0].samples
        if expected is None:  # the average: half the tone, half the word
            expected = read_wav(tmp_path / "call.wav").samples
        assert np.array_equal(samples, expected)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (HEAD, "caller must be a non-empty list"),
        (HEAD + CUE + "speed: 2\n", "unknown key(s) speed"),
        (HEAD.replace("twilio", "skype") + CUE, "provider must be one of"),
        (HEAD + CUE.replace("at_ms: 300", "at_ms: 300\n    after_bot_speech: 1"), "either"),
        (HEAD + CUE.replace("at_ms: 300", "delay_ms: 5"), "either at_ms"),
        (HEAD + CUE.replace("balance_8k", "missing"), "does not exist"),
        (HEAD + CUE.replace("synth/festival/balance_8k", "human/alsa/Noise_8k"), "transcript"),
        (HEAD + CUE + "expect: {turns: many}\n", "expect.turns must be a non-negative"),
        (HEAD + CUE + "expect: {heard: {t1: {txt: x}}}\n", "unknown key(s) txt"),
        (HEAD + CUE + "hang_up: {quiet_ms: -1}\n", "quiet_ms must be a non-negative"),
        (HEAD + CUE + "    channel: centre\n", "channel 'centre' is not a channel"),
        (HEAD + CUE + "    channel: [1]\n", "channel must be mix, left, right or a channel"),
        ("provider: [\n", "invalid YAML"),
    ],
)
def test_a_bad_scenario_is_refused_with_its_reason(tmp_path: Path, body: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        load_scenario(write(tmp_path, body))


def record(t_ms: int, event: str, **fields: Any) -> dict[str, Any]:
    return {"t_ms": t_ms, "event": event, **fields}


TIMELINE = [
    record(0, "turn_started", turn_id="t1"),
    record(10, "tool_started", turn_id="t1", name="lookup"),
    record(20, "say", turn_id="t1", text="Hello."),
    record(30, "interruption", onset_ms=5),
    record(30, "flush_sent"),
    record(30, "heard", turn_id="t1", text="Hel", interrupted=True),
    record(30, "tool_cancelled", turn_id="t1", name="lookup"),
    record(90, "turn_started", turn_id="t2"),
]
OBSERVED = [record(30, "clear_received"), record(60, "bot_audio_started")]


def expectations(tmp_path: Path, expect: str) -> Any:
    return load_scenario(write(tmp_path, HEAD + CUE + "expect:\n" + expect)).expect


def test_expectations_that_hold_are_met(tmp_path: Path) -> None:
    expect = expectations(
        tmp_path,
        """
  turns: 2
  interruptions: 1
  flushes: 1
  clears: 1
  tool_started: [lookup]
  tool_cancelled: [lookup]
  tool_finished: []
  heard: {t1: {starts_with: Hel, interrupted: true}}
  said: {t1: [Hello.]}
  never_said: {t2: [Hello.]}
""",
    )
    assert unmet(expect, TIMELINE, OBSERVED) == []


def test_each_broken_expectation_is_described(tmp_path: Path) -> None:
    expect = expectations(
        tmp_path,
        """
  turns: 1
  clears: 0
  tool_finished: [lookup]
  heard: {t1: "Hello.", t2: {interrupted: false}}
  said: {t2: [Bye.]}
  never_said: {t1: [Hello.]}
  no_bot_audio_after_clear: true
""",
    )
    assert unmet(expect, TIMELINE, OBSERVED) == [
        "turns: expected 1, got 2",
        "clears: expected 0, got 1",
        "tool_finished: expected ['lookup'], got []",
        "heard t1 text: expected 'Hello.', got 'Hel'",
        "heard t2: no heard record for the turn",
        "said t2: 'Bye.' was never said",
        "never_said t1: 'Hello.' was said",
        "bot audio at 60 ms after the clear at 30 ms, before the next turn started (90 ms)",
    ]

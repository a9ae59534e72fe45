"""The replay's summary, latencies and output files; the Twilio caller's hang-up rule."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.replay.replay_kit import read_call_wav, read_jsonl
from voicegate.callers.report import (
    caller_summary,
    heard_turns,
    interruptions,
    summary,
    write_call_wav,
    write_jsonl,
)
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.twilio import TwilioCaller


def record(t_ms: int, event: str, **fields: Any) -> dict[str, Any]:
    return {"t_ms": t_ms, "event": event, **fields}


TIMELINE = [
    record(0, "call_started"),
    record(400, "turn_started", turn_id="t1"),
    record(840, "speech_started", onset_ms=640),
    record(900, "interruption", onset_ms=640, reason="caller speech", epoch=1),
    record(900, "turn_cancelled", turn_id="t1"),
    record(920, "flush_sent", verb="clear"),
    record(920, "heard", turn_id="t1", text="Sure.", interrupted=True),
    record(2000, "turn_started", turn_id="t2"),
    record(2600, "interruption", onset_ms=2400, reason="dtmf", epoch=2),
    record(2600, "flush_sent", verb="clear"),
    record(3000, "heard", turn_id="t2", text="Bye.", interrupted=False),
    record(3100, "call_ended"),
]


def test_latencies_run_from_the_onset_to_each_consequence() -> None:
    first, second = interruptions(TIMELINE)
    assert first.turn_id == "t1"
    assert first.latencies() == {"confirmed": 260, "turn_cancelled": 260, "flush_sent": 280}
    assert first.latencies(from_ms=600) == {
        "confirmed": 300,
        "turn_cancelled": 300,
        "flush_sent": 320,
    }
    # The second cancelled no turn: its cancel is not borrowed from the first.
    assert (second.turn_id, second.cancelled_ms, second.flushed_ms) == (None, None, 2600)


def test_the_summary_tells_turns_latencies_and_what_was_heard() -> None:
    lines = summary(TIMELINE)
    assert lines[0] == "turns: 2   interruptions: 2   media: 3100 ms"
    assert lines[1] == (
        "interruption 1 at 900 ms (turn t1, caller speech): onset → confirmed 260 ms, "
        "→ turn cancelled 260 ms, → flush sent 280 ms"
    )
    assert "no turn cancelled" in lines[2]
    assert lines[3:] == ["heard t1 (interrupted): 'Sure.'", "heard t2: 'Bye.'"]
    assert [h.text for h in heard_turns(TIMELINE)] == ["Sure.", "Bye."]


def test_the_summary_says_when_no_caller_speech_was_detected() -> None:
    silent = [record(0, "call_started"), record(60000, "call_ended")]
    assert summary(silent) == [
        "turns: 0   interruptions: 0   media: 60000 ms",
        "no caller speech detected: the VAD found none, so no turn started",
    ]
    assert not any("no caller speech" in line for line in summary(TIMELINE))
    # ConversationRelay carries text: its turns start from prompts, with no speech records.
    prompted = [*silent[:1], record(900, "turn_started", turn_id="t1"), *silent[1:]]
    assert not any("no caller speech" in line for line in summary(prompted))


def test_the_media_length_counts_what_the_caller_saw_when_the_gateway_saw_no_end() -> None:
    # Vonage, Jambonz, FreeSWITCH, Asterisk and Plivo end a call by closing the socket:
    # no call_ended record, so the gateway's last record may be its first.
    gateway = [record(0, "call_started")]
    observed = [record(0, "stream_opened"), record(60000, "stream_closed", close_code=1000)]
    assert summary(gateway, observed=observed)[0].endswith("media: 60000 ms")
    assert summary(TIMELINE, observed=observed[:1])[0].endswith("media: 3100 ms")


def test_the_caller_summary_counts_what_it_saw() -> None:
    observed = [
        record(100, "bot_audio_started"),
        record(300, "mark_echoed", name="t1.1"),
        record(500, "clear_received", dropped_ms=80),
    ]
    assert caller_summary(observed) == [
        "bot spoke 1 time(s); clears received: 1; marks acknowledged: 1",
        "clear at 500 ms (80 ms of audio dropped)",
    ]


def test_the_caller_summary_says_what_was_said_and_why_the_call_closed() -> None:
    observed = [
        record(400, "cue_started", label="balance", transcript="check my balance"),
        record(900, "stream_closed", close_code=1008),
    ]
    lines = caller_summary(observed)
    assert lines[0] == "caller said at 400 ms: 'check my balance'"
    assert lines[-1].startswith("closed: 1008 (refused: authentication failed")


def test_call_wav_puts_the_caller_left_and_the_bot_right(tmp_path: Path) -> None:
    caller = np.full(800, 100, dtype=np.int16)
    bot = np.full(1600, -200, dtype=np.int16)
    write_call_wav(tmp_path / "call.wav", caller, bot, 8000)
    wav = read_call_wav(tmp_path / "call.wav")
    assert (wav.channels, wav.sample_rate, len(wav.bot)) == (2, 8000, 1600)
    assert (wav.caller[:800] == 100).all()
    assert not wav.caller[800:].any()
    assert (wav.bot == -200).all()


def test_timeline_jsonl_is_one_object_per_line(tmp_path: Path) -> None:
    assert write_jsonl(tmp_path / "t.jsonl", TIMELINE) == len(TIMELINE)
    assert read_jsonl(tmp_path / "t.jsonl") == TIMELINE


def media(payload: bytes, stream: str = "MZ1") -> str:
    body = {"payload": base64.b64encode(payload).decode()}
    return json.dumps({"event": "media", "streamSid": stream, "media": body})


def test_a_twilio_caller_with_quiet_ms_waits_for_the_answer_to_end() -> None:
    script = CallerScript([Cue(np.ones(800, dtype=np.int16), at_ms=0)], 8000, tail_ms=0)
    caller = TwilioCaller(script, quiet_ms=200)
    for _ in range(20):
        caller.tick()
    assert not caller.finished(60_000)  # the script is over, but the bot never answered
    caller.receive(media(bytes([0x10]) * 320))  # 40 ms of answer
    ticks = 0
    while not caller.finished(60_000):
        caller.tick()
        ticks += 1
    assert caller.bot_started_ms == [400]
    assert caller.bot_drained_ms == [440]
    assert ticks == 40 // 20 + 200 // 20  # the answer plays, then 200 ms of quiet after it
    names = [r["event"] for r in caller.observed]
    assert names == ["bot_audio_started", "bot_audio_drained"]


def test_the_summary_says_what_speech_the_echo_gate_dropped() -> None:
    # A caller at -50 dBFS over the bot: the gate took it for echo and it left no other trace.
    records = [*TIMELINE[:-1], record(2900, "echo_suppressed", onset_ms=2800, end_ms=2900)]
    assert (
        "speech at 2800-2900 ms dropped as the bot's echo: no louder than its echo could be "
        "(docs/turn-taking.md, Echo gate)"
    ) in summary(records)
    assert not any("echo" in line for line in summary(TIMELINE))

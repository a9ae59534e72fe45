"""The emulated browser client, message by message (docs/protocols/browser.md §3-§6)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from voicegate.callers.browser import BrowserCaller
from voicegate.callers.script import CallerScript, Cue
from voicegate.errors import RemoteProtocolError

STARTED = json.dumps({"type": "started", "version": 1, "callId": "web-1", "sampleRate": 8000})
FRAME_8K = 320  # bytes of 20 ms PCM16 at 8 kHz


def mark(name: str) -> str:
    return json.dumps({"type": "mark", "name": name})


def tone(samples: int, value: int = 1000) -> bytes:
    return np.full(samples, value, dtype="<i2").tobytes()


def caller(rate: int = 16000, cues: tuple[Cue, ...] = (), **options: object) -> BrowserCaller:
    return BrowserCaller(CallerScript(cues, rate, tail_ms=0), **options)  # type: ignore[arg-type]


def acks(messages: list[str | bytes]) -> list[str]:
    return [json.loads(m)["name"] for m in messages if isinstance(m, str)]


def test_start_declares_the_capture_rate_and_metadata() -> None:
    (start,) = caller(24000, metadata={"tenant": "acme"}).opening()
    assert json.loads(start) == {
        "type": "start",
        "version": 1,
        "sampleRate": 24000,
        "metadata": {"tenant": "acme"},
    }


def test_a_rate_the_dialect_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="captures at one of"):
        caller(44100)


def test_every_tick_sends_20ms_of_pcm16_silence_included() -> None:
    speech = np.arange(1, 321, dtype=np.int16)  # 20 ms at 16 kHz, nonzero
    browser = caller(16000, (Cue(speech, at_ms=20),))
    first, second, third = browser.tick(), browser.tick(), browser.tick()
    assert first == [bytes(640)]
    assert second == [speech.astype("<i2").tobytes()]
    assert third == [bytes(640)]
    assert browser.now_ms == 60


def test_started_names_the_call_and_the_output_rate() -> None:
    browser = caller()
    assert browser.receive(STARTED) == []
    assert browser.call_id == "web-1"
    assert browser.output_sample_rate == 8000


def test_a_mark_is_acknowledged_once_the_audio_before_it_has_played() -> None:
    browser = caller()
    browser.receive(STARTED)
    browser.receive(tone(160 + 80))  # 30 ms of bot audio
    assert browser.receive(mark("m1")) == []
    assert acks(browser.tick()) == []  # 20 ms played, 10 ms to go
    assert acks(browser.tick()) == ["m1"]
    assert browser.bot_started_ms == [0]


def test_a_mark_with_nothing_queued_is_acknowledged_at_once() -> None:
    browser = caller()
    browser.receive(STARTED)
    assert browser.receive(mark("m0")) == [mark("m0")]


def test_clear_drops_the_audio_and_acknowledges_pending_marks_in_order() -> None:
    browser = caller(8000)  # the output rate: the bot track needs no resampling
    browser.receive(STARTED)
    browser.receive(tone(FRAME_8K))  # 40 ms
    browser.receive(mark("a"))
    browser.receive(tone(FRAME_8K))
    browser.receive(mark("b"))
    browser.tick()  # 20 ms of "a"'s audio played
    assert browser.receive(json.dumps({"type": "clear"})) == [mark("a"), mark("b")]
    assert browser.clears == [20]
    browser.tick()
    _, bot = browser.tracks()
    assert (bot[:160] == 1000).all()  # the 20 ms played before the clear
    assert not bot[160:].any()  # nothing after it
    clear = next(r for r in browser.observed if r["event"] == "clear_received")
    assert clear == {"t_ms": 20, "event": "clear_received", "dropped_ms": 60}


def test_tracks_line_up_at_the_capture_rate() -> None:
    browser = caller(16000)
    browser.tick()  # before `started`: no bot audio can play
    browser.receive(STARTED)
    browser.receive(tone(160))
    browser.tick()
    browser.tick()
    caller_track, bot_track = browser.tracks()
    assert len(caller_track) == 3 * 320
    assert len(bot_track) == 3 * 320  # 20 ms of silence, then 40 ms resampled from 8 kHz
    assert not bot_track[:320].any()
    assert np.abs(bot_track[340:620]).min() > 900


def test_unknown_messages_are_ignored_and_stop_is_noted() -> None:
    browser = caller()
    browser.receive(STARTED)
    assert browser.receive(json.dumps({"type": "transcript", "text": "hi"})) == []
    browser.receive(json.dumps({"type": "stop", "reason": "goodbye"}))
    assert browser.stopped_reason == "goodbye"
    assert browser.observed[-1]["event"] == "stop_received"


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (b"\x00\x00", "before 'started'"),
        ("not json", "not JSON"),
        ("[1]", "JSON object"),
        (json.dumps({"type": "started", "callId": "x", "sampleRate": 44100}), "sampleRate"),
        (json.dumps({"type": "mark"}), "'name'"),
    ],
)
def test_a_malformed_gateway_message_is_an_error(message: str | bytes, problem: str) -> None:
    with pytest.raises(RemoteProtocolError, match=problem):
        caller().receive(message)


def test_an_odd_audio_frame_is_an_error() -> None:
    browser = caller()
    browser.receive(STARTED)
    with pytest.raises(RemoteProtocolError, match="3 bytes"):
        browser.receive(b"\x00\x00\x00")


def test_with_quiet_ms_it_hangs_up_only_after_the_bot_answered_and_went_quiet() -> None:
    browser = caller(8000, (Cue(np.ones(160, dtype=np.int16), at_ms=0),), quiet_ms=100)
    browser.receive(STARTED)
    for _ in range(10):
        browser.tick()
    assert not browser.finished(60_000)  # the bot has not spoken since the cue began
    browser.receive(tone(FRAME_8K // 2))  # 20 ms of answer
    browser.tick()
    browser.tick()  # drained here
    ticks = 0
    while not browser.finished(60_000):
        browser.tick()
        ticks += 1
    assert ticks == 100 // 20 - 1  # quiet for 100 ms since the drain
    assert browser.finished(60_000)


def event(**record: object) -> str:
    return json.dumps({"type": "event", **record})


def test_the_gateways_timeline_events_are_kept_and_checked() -> None:
    browser = caller(8000)
    browser.receive(STARTED)
    heard = {"t_ms": 900, "event": "heard", "turn_id": "t1", "text": "Hi.", "interrupted": False}
    assert browser.receive(event(**heard)) == []
    browser.receive(event(t_ms=950, event="something_new", extra=[1, 2]))  # unknown: kept
    assert browser.timeline == [heard, {"t_ms": 950, "event": "something_new", "extra": [1, 2]}]
    with pytest.raises(RemoteProtocolError, match="'t_ms' must be an integer"):
        browser.receive(event(t_ms="soon", event="say"))
    with pytest.raises(RemoteProtocolError, match="'heard': 'text' must be str"):
        browser.receive(event(t_ms=1000, event="heard", turn_id="t2", interrupted=True))

"""The emulated Asterisk channel behaves as chan_websocket does (callers/asterisk.py)."""

from __future__ import annotations

import json

import pytest

from voicegate.callers.asterisk import XOFF_LEVEL, AsteriskCaller
from voicegate.callers.script import CallerScript
from voicegate.codecs import AsteriskCodec, CallStarted
from voicegate.codecs.asterisk_wire import ControlFormat
from voicegate.errors import RemoteProtocolError

QUIET = CallerScript([], 8000, tail_ms=0)
FRAME = bytes(range(96, 256))  # 20 ms of μ-law, never the silence byte


def events(messages: list[str | bytes]) -> list[str]:
    return [json.loads(m)["event"] for m in messages if isinstance(m, str)]


def test_media_start_is_what_the_codec_reads_in_both_formats() -> None:
    for control in ControlFormat:
        caller = AsteriskCaller(QUIET, channel_id="1.2", control=control, parameters={"k": "v"})
        (start,) = AsteriskCodec("gw").receive(caller.opening()[0])
        assert isinstance(start, CallStarted)
        assert (start.call_id, start.audio_format.sample_rate) == ("1.2", 8000)
        assert ("k" in start.metadata) is (control is ControlFormat.JSON)  # channel variables
    assert len(caller.tick()[-1]) == 160  # one 20 ms μ-law frame per tick


def test_marks_answer_once_played_and_flush_drops_them_with_the_audio() -> None:
    caller = AsteriskCaller(QUIET)
    assert caller.receive(FRAME * 2 + FRAME[:50]) == []  # the partial frame is dropped
    assert caller.dropped_bytes == 50
    assert caller.receive('{"command":"MARK_MEDIA","correlation_id":"t1.1"}') == []
    assert events(caller.tick()) == []
    assert events(caller.tick()) == ["MEDIA_MARK_PROCESSED"]
    caller.receive(FRAME * 3)
    caller.receive('{"command":"MARK_MEDIA","correlation_id":"t1.2"}')
    assert caller.receive('{"command":"FLUSH_MEDIA"}') == []
    assert caller.clears
    assert all(events(caller.tick()) == [] for _ in range(5))  # t1.2 went with the frames


def test_pause_plays_silence_and_keeps_the_queue() -> None:
    caller = AsteriskCaller(QUIET, control=ControlFormat.PLAIN)
    caller.receive(FRAME)
    caller.receive("MARK_MEDIA m1")
    caller.receive("PAUSE_MEDIA")
    assert caller.tick()[:-1] == []
    assert bytes(caller.bot_track) == b"\xff" * 160
    caller.receive("CONTINUE_MEDIA")
    assert caller.tick()[:-1] == ["MEDIA_MARK_PROCESSED m1"]
    assert bytes(caller.bot_track)[160:] == FRAME


def test_flow_control_and_the_message_limits() -> None:
    caller = AsteriskCaller(QUIET)
    for count in (400, 400, XOFF_LEVEL - 801):  # below 65,500 bytes a message
        assert events(caller.receive(FRAME * count)) == []
    assert events(caller.receive(FRAME)) == ["MEDIA_XOFF"]
    ticks = [events(caller.tick()) for _ in range(101)]
    assert ticks[-1] == ["MEDIA_XON"]
    assert not any(ticks[:-1])
    with pytest.raises(RemoteProtocolError, match="closes the socket"):
        caller.receive(bytes(65_600))
    with pytest.raises(RemoteProtocolError, match="is ignored"):
        caller.receive(json.dumps({"command": "MARK_MEDIA", "correlation_id": "m" * 120}))
    with pytest.raises(RemoteProtocolError, match="expects no 'ANSWER'"):
        caller.receive('{"command":"ANSWER"}')
    assert not caller.finished(60_000)
    caller.receive('{"command":"HANGUP"}')
    assert caller.finished(60_000)

"""The emulated Telnyx, Plivo and Vonage callers behave as their providers document."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from voicegate.callers.plivo import PlivoCaller
from voicegate.callers.script import CallerScript
from voicegate.callers.telnyx import TelnyxCaller
from voicegate.callers.vonage import VonageCaller
from voicegate.errors import RemoteProtocolError

QUIET = CallerScript([], 8000, tail_ms=0)
SID = "87654321-0000-4000-8000-000000000042"


def events(messages: list[str | bytes]) -> list[str]:
    return [json.loads(message)["event"] for message in messages]


def test_telnyx_caller_refuses_chunks_outside_20_ms_to_30_s() -> None:
    caller = TelnyxCaller(QUIET)
    short = {"event": "media", "media": {"payload": base64.b64encode(b"\xff" * 80).decode()}}
    with pytest.raises(RemoteProtocolError, match="is not 20 ms"):
        caller.receive(json.dumps(short))
    with pytest.raises(RemoteProtocolError, match="does not accept"):
        caller.receive(json.dumps({"event": "checkpoint"}))


def test_telnyx_caller_returns_queued_marks_on_clear() -> None:
    caller = TelnyxCaller(QUIET)
    media = {"event": "media", "media": {"payload": base64.b64encode(b"\x10" * 320).decode()}}
    caller.receive(json.dumps(media))
    assert caller.receive(json.dumps({"event": "mark", "mark": {"name": "m1"}})) == []
    echoes = caller.receive(json.dumps({"event": "clear"}))
    assert [json.loads(echo)["mark"]["name"] for echo in echoes] == ["m1"]


def test_plivo_caller_answers_checkpoints_only_for_audio_that_played() -> None:
    caller = PlivoCaller(QUIET, stream_id=SID)
    assert events(caller.opening()) == ["start"]
    assert caller.closing() is None  # Plivo just closes the socket
    media = {"contentType": "audio/x-mulaw", "sampleRate": 8000}
    play = {
        "event": "playAudio",
        "media": {**media, "payload": base64.b64encode(b"\x10" * 160).decode()},
    }
    checkpoint = {"event": "checkpoint", "streamId": SID, "name": "c1"}
    # Nothing queued: answered at once.
    assert events(caller.receive(json.dumps(checkpoint))) == ["playedStream"]
    caller.receive(json.dumps(play))
    assert caller.receive(json.dumps({**checkpoint, "name": "c2"})) == []
    assert events(caller.tick()) == ["playedStream", "media"]  # 20 ms played: c2 answered
    caller.receive(json.dumps(play))
    caller.receive(json.dumps({**checkpoint, "name": "c3"}))
    cleared = caller.receive(json.dumps({"event": "clearAudio", "streamId": SID}))
    assert events(cleared) == ["clearedAudio"]  # and c3 is never answered
    assert events(caller.tick()) == ["media"]
    assert any(r["event"] == "marks_dropped" and r["names"] == ["c3"] for r in caller.observed)
    _, bot = caller.tracks()
    assert np.count_nonzero(bot) > 0


def test_plivo_caller_refuses_audio_in_another_format() -> None:
    caller = PlivoCaller(QUIET, stream_id=SID)
    wrong = {
        "event": "playAudio",
        "media": {"contentType": "audio/x-l16", "sampleRate": 16000, "payload": "AAA="},
    }
    with pytest.raises(RemoteProtocolError, match="audio/x-mulaw at 8000"):
        caller.receive(json.dumps(wrong))
    with pytest.raises(RemoteProtocolError, match="not ours"):
        caller.receive(json.dumps({"event": "clearAudio", "streamId": "other"}))


def test_vonage_caller_takes_exact_20_ms_frames_and_answers_notify_and_clear() -> None:
    caller = VonageCaller(CallerScript([], 16000, tail_ms=0), uuid="u1")
    first = json.loads(caller.opening()[0])
    assert first == {
        "event": "websocket:connected",
        "content-type": "audio/l16;rate=16000",
        "uuid": "u1",
    }
    assert caller.closing() is None
    with pytest.raises(RemoteProtocolError, match="is not 20 ms"):
        caller.receive(bytes(320))
    notify = {"action": "notify", "payload": {"name": "n1", "extra": 1}}
    assert json.loads(caller.receive(json.dumps(notify))[0]) == {
        "event": "websocket:notify",
        "payload": {"name": "n1", "extra": 1},
    }
    caller.receive(bytes(640))
    caller.receive(json.dumps({**notify, "payload": {"name": "n2"}}))
    assert caller.receive(json.dumps({"action": "clear"})) == ['{"event": "websocket:cleared"}']
    assert [message for message in caller.tick() if isinstance(message, str)] == []
    with pytest.raises(RemoteProtocolError, match="does not accept"):
        caller.receive(json.dumps({"action": "talk"}))

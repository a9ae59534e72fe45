"""The emulated Exotel, Jambonz, FreeSWITCH and Genesys callers behave as their providers say."""

from __future__ import annotations

import base64
import json

import pytest

from voicegate.callers.exotel import ExotelCaller
from voicegate.callers.freeswitch import FreeSwitchCaller
from voicegate.callers.genesys import GenesysCaller
from voicegate.callers.jambonz import JambonzCaller
from voicegate.callers.script import CallerScript
from voicegate.errors import RemoteProtocolError

QUIET = CallerScript([], 8000, tail_ms=0)


def exotel_media(caller: ExotelCaller, size: int) -> str:
    payload = base64.b64encode(bytes(size)).decode()
    return json.dumps({"event": "media", "stream_sid": "MZ1", "media": {"payload": payload}})


def test_exotel_caller_sends_100_ms_media_and_holds_the_gateway_to_the_chunk_rules() -> None:
    caller = ExotelCaller(QUIET, stream_sid="MZ1")
    opening = [json.loads(message)["event"] for message in caller.opening()]
    assert opening == ["connected", "start"]
    sent = [caller.tick() for _ in range(10)]
    media = [json.loads(m) for batch in sent for m in batch if isinstance(m, str)]
    assert [m["media"]["chunk"] for m in media] == ["1", "2"]
    assert [len(base64.b64decode(m["media"]["payload"])) for m in media] == [1600, 1600]
    for size in (3000, 3520 + 2, 100_320):  # under the minimum, not 320-byte blocks, too big
        with pytest.raises(RemoteProtocolError, match="breaks the rules"):
            caller.receive(exotel_media(caller, size))
    assert caller.receive(exotel_media(caller, 3200)) == []
    with pytest.raises(RemoteProtocolError, match="is not ours"):
        caller.receive(json.dumps({"event": "clear", "stream_sid": "MZ2"}))
    assert json.loads(caller.closing())["stop"]["reason"] == "callended"


def test_jambonz_caller_takes_binary_audio_kill_audio_and_disconnect() -> None:
    caller = JambonzCaller(QUIET, call_sid="c1", parameters={"tenant": "acme"})
    first = json.loads(caller.opening()[0])
    assert (first["sampleRate"], first["callSid"], first["tenant"]) == (8000, "c1", "acme")
    assert caller.subprotocols == ("audio.jambonz.org",)
    with pytest.raises(RemoteProtocolError, match="not whole samples"):
        caller.receive(b"\x01")
    caller.receive(bytes(640))
    caller.receive('{"type":"killAudio"}')
    assert caller.clears == [0]
    caller.receive(bytes(640))  # more bot audio: the call is not over while it plays
    assert not caller.finished(60_000)
    caller.receive('{"type":"disconnect"}')
    assert caller.finished(60_000)
    with pytest.raises(RemoteProtocolError, match="does not accept"):
        caller.receive('{"type":"mark","data":{"name":"m"}}')


def play_audio(payload: bytes, rate: int = 8000, kind: str = "raw") -> str:
    content = base64.b64encode(payload).decode()
    data = {"audioContentType": kind, "sampleRate": rate, "audioContent": content}
    return json.dumps({"type": "playAudio", "data": data})


def test_freeswitch_caller_plays_play_audio_files_in_order_and_honours_kill_audio() -> None:
    caller = FreeSwitchCaller(QUIET, uuid="u1", parameters={"tenant": "acme"})
    first = json.loads(caller.opening()[0])
    assert (first["uuid"], first["sampleRate"], first["tenant"]) == ("u1", 8000, "acme")
    assert caller.subprotocols == ("audio.drachtio.org",)
    [frame] = caller.tick()
    assert frame == bytes(320)  # 20 ms of L16 silence, binary
    # mod_audio_fork discards binary frames from the server (audio_pipe.cpp).
    with pytest.raises(RemoteProtocolError, match="binary frame"):
        caller.receive(bytes(640))
    for wrong in (play_audio(bytes(4), rate=16000), play_audio(bytes(4), kind="wave")):
        with pytest.raises(RemoteProtocolError, match="raw L16 at 8000"):
            caller.receive(wrong)
    with pytest.raises(RemoteProtocolError, match="not whole samples"):
        caller.receive(play_audio(b"\x01"))
    caller.receive(play_audio(b"\x01\x00" * 160))
    caller.receive(play_audio(b"\x02\x00" * 160))
    assert caller.files == 2
    caller.tick()  # the first file plays
    assert bytes(caller.bot_track[-320:]) == b"\x01\x00" * 160
    caller.receive('{"type":"killAudio"}')  # the second, queued, is dropped
    caller.tick()
    assert bytes(caller.bot_track[-320:]) == bytes(320)
    assert caller.clears == [40]
    caller.receive('{"type":"disconnect"}')
    assert caller.finished(60_000)
    with pytest.raises(RemoteProtocolError, match="does not accept"):
        caller.receive('{"type":"mark","data":{"name":"m"}}')


def server(kind: str, seq: int, **parameters: object) -> str:
    envelope = {
        "version": "2",
        "type": kind,
        "seq": seq,
        "clientseq": 1,
        "id": "30b0e395-0000-4000-8000-000000000042",
        "parameters": parameters,
    }
    return json.dumps(envelope)


def test_genesys_caller_waits_for_opened_and_enforces_the_rate_limit() -> None:
    caller = GenesysCaller(QUIET)
    assert json.loads(caller.opening()[0])["type"] == "open"
    assert caller.tick() == []  # no audio before opened
    with pytest.raises(RemoteProtocolError, match="before opened"):
        caller.receive(bytes(1600))
    caller.receive(server("opened", 1, media=[]))
    assert [m for m in caller.tick() if isinstance(m, bytes)] == [bytes([0xFF]) * 160]
    for _ in range(25):  # the burst allowance
        caller.receive(bytes(160))
    with pytest.raises(RemoteProtocolError, match="rate limit"):
        caller.receive(bytes(160))
    with pytest.raises(RemoteProtocolError, match="out of order"):
        caller.receive(server("pong", 5))


def test_genesys_caller_drops_its_queue_on_barge_in_and_answers_disconnect() -> None:
    caller = GenesysCaller(QUIET)
    caller.opening()
    caller.receive(server("opened", 1, media=[]))
    caller.receive(bytes(1600))
    started = [json.loads(m)["type"] for m in caller.tick() if isinstance(m, str)]
    assert started == ["playback_started"]
    caller.receive(server("event", 2, entities=[{"type": "barge_in", "data": {}}]))
    assert caller.clears
    (close,) = caller.receive(server("disconnect", 3, reason="completed"))
    assert json.loads(close)["type"] == "close"
    caller.receive(server("closed", 4))
    assert caller.finished(60_000)
    assert caller.closing() is None

"""The Twilio codec's unchecked path for plain `media` messages agrees with the strict reader.

Every message below goes through a normal codec and through one whose fast path is switched
off: both must return the same events or raise the same error.
"""

from __future__ import annotations

import json

import pytest

from voicegate.codecs import Event, PlayAudio, SetMark, TwilioCodec
from voicegate.errors import RemoteProtocolError

SID = "MZ0123"
START = {
    "event": "start",
    "streamSid": SID,
    "start": {
        "streamSid": SID,
        "callSid": "CA1",
        "tracks": ["inbound"],
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
    },
}
MEDIA = {"track": "inbound", "chunk": "2", "timestamp": "20", "payload": "//79/A=="}


class StrictTwilioCodec(TwilioCodec):
    """The codec with only the field-by-field reader."""

    def _plain_media(self, data: dict[str, object]) -> None:
        return None


def media(**changes: object) -> str:
    body = {**MEDIA, **changes}
    return json.dumps({"event": "media", "streamSid": SID, "media": body})


VARIANTS = [
    media(),
    media(track="inbound_track"),
    media(track="outbound"),
    media(track="both"),
    media(chunk=7, timestamp=140),
    media(chunk=None, timestamp=None),
    media(chunk="-1"),
    media(chunk="1" * 19),
    media(payload="not base64!"),
    media(payload="//79/A="),
    media(payload=17),
    media(extra={"ignored": True}),
    json.dumps({"event": "media", "streamSid": "MZother", "media": MEDIA}),
    json.dumps({"event": "media", "streamSid": SID, "media": [1]}),
    json.dumps({"event": "media", "streamSid": SID}),
    json.dumps({"event": "media", "media": MEDIA}),
]


def outcome(codec: TwilioCodec, message: str) -> list[Event] | str:
    codec.receive(json.dumps(START))
    try:
        return codec.receive(message)
    except RemoteProtocolError as error:
        return f"error: {error}"


@pytest.mark.parametrize("message", VARIANTS)
def test_fast_and_strict_paths_agree(message: str) -> None:
    assert outcome(TwilioCodec(), message) == outcome(StrictTwilioCodec(), message)


def test_media_before_start_is_still_refused() -> None:
    with pytest.raises(RemoteProtocolError, match="before 'start'"):
        TwilioCodec().receive(media())


@pytest.mark.parametrize("sid", [SID, 'MZ"quoted\\sid', "MZ\u00e9"])
def test_outbound_media_is_what_json_dumps_would_write(sid: str) -> None:
    codec = TwilioCodec()
    start = json.loads(json.dumps(START))
    start["streamSid"] = start["start"]["streamSid"] = sid
    codec.receive(json.dumps(start))
    (message,) = codec.send(PlayAudio(b"\x00\xff\x7f"))
    expected = {"event": "media", "streamSid": sid, "media": {"payload": "AP9/"}}
    assert message == json.dumps(expected, separators=(",", ":"))
    (mark,) = codec.send(SetMark("m1"))
    assert json.loads(mark) == {"event": "mark", "streamSid": sid, "mark": {"name": "m1"}}

"""The emulated Twilio caller's ``media`` messages are the JSON Twilio documents."""

from __future__ import annotations

import base64
import json

import numpy as np

from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.twilio import FRAME_BYTES, TwilioCaller

TONE = (np.sin(np.arange(400) / 3) * 8000).astype(np.int16)  # 50 ms, so the third frame ends it


def test_media_messages_are_what_json_dumps_gives_for_speech_and_silence() -> None:
    stream_sid = 'MZ"odd\\sid'  # a sid JSON must escape
    caller = TwilioCaller(CallerScript([Cue(TONE, at_ms=20)], 8000), stream_sid=stream_sid)
    caller.opening()  # "start" is sequence number 1
    messages = [caller.tick() for _ in range(5)]
    for index, [message] in enumerate(messages):
        at_ms = 20 * index
        frame = bytes(caller.caller_track[index * FRAME_BYTES : (index + 1) * FRAME_BYTES])
        media = {
            "track": "inbound",
            "chunk": str(index + 1),
            "timestamp": str(at_ms),
            "payload": base64.b64encode(frame).decode("ascii"),
        }
        header = {"event": "media", "sequenceNumber": str(index + 2)}
        assert message == json.dumps({**header, "streamSid": stream_sid, "media": media})
    heard = [base64.b64decode(json.loads(m[0])["media"]["payload"]) for m in messages]
    silence = samples_to_ulaw_bytes(np.zeros(160, dtype=np.int16))
    assert heard[0] == heard[4] == silence == b"\xff" * FRAME_BYTES
    assert heard[1] == samples_to_ulaw_bytes(TONE[:160])
    assert heard[3][:80] == samples_to_ulaw_bytes(TONE[320:])

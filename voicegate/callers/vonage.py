"""The provider side of a Vonage Voice API websocket leg, emulated.

What Vonage does (shared/spec/providers.md §b.3;
https://developer.vonage.com/en/voice/voice-api/concepts/websockets): a first text frame with
``"event": "websocket:connected"``, the ``content-type`` and the NCCO headers, then one binary
frame of 16-bit little-endian PCM per 20 ms, silence included. Bot audio arrives as binary
frames of exactly 20 ms, played in order; ``{"action":"notify"}`` is answered with
``websocket:notify`` (its payload echoed) once the audio before it has played;
``{"action":"clear"}`` drops the queue and is answered with ``websocket:cleared``. Vonage does
not say whether a clear answers pending notifies; this emulation drops them, the stricter case
for the gateway. Vonage sends no stop: the caller hangs up by closing the socket.

Pure and synchronous: a driver (``callers/driver.py``) moves the messages over a WebSocket.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from voicegate.callers.line_caller import LineCaller
from voicegate.callers.script import CallerScript
from voicegate.callers.telephone import TelephoneLine
from voicegate.errors import RemoteProtocolError
from voicegate.types import AudioEncoding, AudioFormat

DEFAULT_UUID = "aaaaaaaa-0000-4000-8000-000000000042"
SAMPLE_RATES = (8000, 16000)


class VonageCaller(LineCaller):
    """One emulated Vonage leg: binary caller audio out, bot audio in, notify and clear."""

    def __init__(
        self,
        script: CallerScript,
        *,
        uuid: str = "",  # empty: DEFAULT_UUID
        parameters: Mapping[str, str] | None = None,
        quiet_ms: int | None = None,
    ) -> None:
        if script.sample_rate not in SAMPLE_RATES:
            raise ValueError(f"a Vonage caller streams L16 at one of {SAMPLE_RATES} Hz")
        wire = AudioFormat(AudioEncoding.L16, script.sample_rate)
        super().__init__(TelephoneLine(script, wire, quiet_ms=quiet_ms), uuid or DEFAULT_UUID)
        self._headers = dict(parameters or {})
        self._notifies: dict[str, Any] = {}  # mark name -> the payload to echo

    def opening(self) -> list[str]:
        """The first text frame: connected, content-type and the NCCO headers."""
        first = {
            "event": "websocket:connected",
            "content-type": f"audio/l16;rate={self.sample_rate}",
            "uuid": self._call_id,
            **self._headers,
        }
        return [json.dumps(first)]

    def closing(self) -> None:
        """Vonage sends no stop: the leg ends when the socket closes."""
        return None

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, answer the notifies now played, send caller audio."""
        frame, played = self._line.tick()
        return [*self._notified(played), frame]

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway message; messages to send back at once."""
        if isinstance(message, bytes):
            self._queue_audio(message)
            return []
        data = _parse(message)
        match data.get("action"):
            case "notify":
                return self._notified(self._queue_notify(data.get("payload")))
            case "clear":
                self._line.clear(drop_marks=True)
                self._notifies.clear()
                return [json.dumps({"event": "websocket:cleared"})]
            case other:
                raise RemoteProtocolError(f"vonage does not accept action {other!r}")

    def _queue_audio(self, frame: bytes) -> None:
        """Bot audio: exactly 20 ms of L16 per binary frame, as Vonage requires."""
        if len(frame) != self._line.frame_bytes:
            size = self._line.frame_bytes
            raise RemoteProtocolError(f"vonage: a {len(frame)}-byte frame is not 20 ms ({size})")
        self._line.playback.queue_audio(frame)

    def _queue_notify(self, payload: object) -> list[str]:
        if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
            raise RemoteProtocolError("vonage: this emulation expects notify payload.name")
        name = str(payload["name"])
        self._notifies[name] = payload
        return self._line.playback.queue_mark(name, self._line.now_ms)

    def _notified(self, names: list[str]) -> list[str]:
        events = [{"event": "websocket:notify", "payload": self._notifies.pop(n)} for n in names]
        return [json.dumps(event) for event in events]


def _parse(message: str) -> dict[str, Any]:
    try:
        data = json.loads(message)
    except json.JSONDecodeError as error:
        raise RemoteProtocolError(f"vonage: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise RemoteProtocolError("vonage: a text frame must be a JSON object")
    return data

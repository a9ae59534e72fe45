"""The provider side of a Telnyx media stream (bidirectional RTP mode), emulated.

What Telnyx does (shared/spec/providers.md §b.4; Telnyx's AsyncAPI page
https://developers.telnyx.com/api-reference/websockets/stream-call-media-over-websocket ):
``connected`` then ``start`` (snake_case, ``stream_id`` at the top level, ``call_control_id``
and ``custom_parameters`` inside), then one ``media`` frame of caller audio per 20 ms,
silence included. Bot audio arrives as ``media`` frames of 20 ms to 30 s, played in order; a
``mark`` is echoed once the audio before it has played, at once when nothing is queued;
``clear`` stops playback, drops the queue and returns the queued marks. Anything else from the
gateway is refused, as Telnyx would.

Pure and synchronous: a driver (``callers/driver.py``) moves the messages over a WebSocket.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from voicegate.callers.line_caller import LineCaller
from voicegate.callers.script import CallerScript
from voicegate.callers.telephone import FRAME_MS, TelephoneLine
from voicegate.errors import RemoteProtocolError
from voicegate.types import TELEPHONE_ULAW

SAMPLE_RATE = 8000
#: "RTP media chunks sent back to Telnyx can contain 20 milliseconds to 30 seconds of audio".
MIN_CHUNK_BYTES = TELEPHONE_ULAW.bytes_for_ms(20)
MAX_CHUNK_BYTES = TELEPHONE_ULAW.bytes_for_ms(30_000)


class TelnyxCaller(LineCaller):
    """One emulated Telnyx call: caller audio out, bot audio in, marks and clear honoured."""

    def __init__(
        self,
        script: CallerScript,
        *,
        call_control_id: str = "v3:emulated-telnyx-call-0000000000000042",
        stream_id: str = "32de0dea-0000-4000-8000-000000000042",
        parameters: Mapping[str, str] | None = None,
        quiet_ms: int | None = None,
    ) -> None:
        super().__init__(TelephoneLine(script, TELEPHONE_ULAW, quiet_ms=quiet_ms), call_control_id)
        self._stream_id = stream_id
        self._parameters = dict(parameters or {})
        self._sequence = 0

    def opening(self) -> list[str]:
        """The ``connected`` and ``start`` frames."""
        start = {
            "user_id": "3e6f995f-0000-4000-8000-000000000042",
            "call_control_id": self._call_id,
            "call_session_id": "ff55a038-0000-4000-8000-000000000042",
            "from": "+13122010094",
            "to": "+13122123456",
            "client_state": None,
            "custom_parameters": self._parameters,
            "media_format": {"encoding": "PCMU", "sample_rate": SAMPLE_RATE, "channels": 1},
        }
        connected = json.dumps({"event": "connected", "version": "1.0.0"})
        return [connected, self._frame("start", start=start)]

    def closing(self) -> str:
        """The ``stop`` frame: the caller hung up."""
        stop = {"user_id": "3e6f995f", "call_control_id": self._call_id}
        return self._frame("stop", stop=stop)

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, echo the marks now played, send caller audio."""
        now_ms = self._line.now_ms
        frame, played = self._line.tick()
        media = {
            "track": "inbound",
            "chunk": str(now_ms // FRAME_MS + 1),
            "timestamp": str(now_ms),
            "payload": base64.b64encode(frame).decode("ascii"),
        }
        return [*self._marks(played), self._frame("media", media=media)]

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway frame; frames to send back at once (mark callbacks)."""
        data = _parse(message)
        match data.get("event"):
            case "media":
                self._line.playback.queue_audio(_chunk(data))
            case "mark":
                name = _mark_name(data)
                return self._marks(self._line.playback.queue_mark(name, self._line.now_ms))
            case "clear":
                return self._marks(self._line.clear())
            case other:
                raise RemoteProtocolError(f"telnyx does not accept event {other!r}")
        return []

    def _marks(self, names: list[str]) -> list[str]:
        return [self._frame("mark", mark={"name": name}) for name in names]

    def _frame(self, event: str, **body: object) -> str:
        self._sequence += 1
        header = {"event": event, "sequence_number": str(self._sequence)}
        return json.dumps({**header, "stream_id": self._stream_id, **body})


def _parse(message: str | bytes) -> dict[str, Any]:
    if isinstance(message, bytes):
        raise RemoteProtocolError("telnyx media streaming takes JSON text frames, not binary")
    try:
        data = json.loads(message)
    except json.JSONDecodeError as error:
        raise RemoteProtocolError(f"telnyx: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise RemoteProtocolError("telnyx: a frame must be a JSON object")
    return data


def _chunk(data: dict[str, Any]) -> bytes:
    """A Client Media Frame's RTP payload, held to Telnyx's 20 ms to 30 s per frame."""
    try:
        payload = base64.b64decode(data["media"]["payload"], validate=True)
    except (KeyError, TypeError, binascii.Error) as error:
        raise RemoteProtocolError(f"telnyx: bad media payload: {error}") from error
    if not MIN_CHUNK_BYTES <= len(payload) <= MAX_CHUNK_BYTES:
        raise RemoteProtocolError(
            f"telnyx: a media chunk of {len(payload)} bytes is not 20 ms-30 s"
        )
    return payload


def _mark_name(data: dict[str, Any]) -> str:
    mark = data.get("mark")
    name = mark.get("name") if isinstance(mark, dict) else None
    if not isinstance(name, str) or not name:
        raise RemoteProtocolError("telnyx: a mark frame needs mark.name")
    return name

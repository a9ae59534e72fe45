"""The provider side of a Plivo bidirectional audio stream, emulated.

What Plivo does (shared/spec/providers.md §b.5;
https://plivo.com/docs/voice/audio-streaming/audio-streaming ,
https://plivo.com/docs/voice/xml/the-stream-element/checkpoint-event): ``start`` (camelCase,
``callId`` and ``streamId`` inside, ``extra_headers`` beside), then one ``media`` event of
caller audio per 20 ms, silence included. Bot audio arrives as ``playAudio`` in the stream's
content type and rate, played in order; a ``checkpoint`` is answered with ``playedStream``
once the audio before it has played; ``clearAudio`` drops the queue, answers
``clearedAudio``, and the pending checkpoints are never answered. Plivo sends no ``stop``:
the caller hangs up by closing the socket.

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
from voicegate.types import TELEPHONE_ULAW, AudioEncoding, AudioFormat

#: The content types of <Stream contentType> (XML reference), by wire format.
CONTENT_TYPES = {AudioEncoding.PCMU: "audio/x-mulaw", AudioEncoding.L16: "audio/x-l16"}
DEFAULT_CALL_ID = "12345678-0000-4000-8000-000000000042"
#: An arbitrary Unix time (ms) for media.timestamp, which Plivo sends as wall-clock time.
_EPOCH_MS = 1_705_312_200_000


class PlivoCaller(LineCaller):
    """One emulated Plivo call: caller audio out, bot audio in, checkpoints and clearAudio."""

    def __init__(
        self,
        script: CallerScript,
        *,
        call_id: str = "",  # empty: DEFAULT_CALL_ID
        stream_id: str = "87654321-0000-4000-8000-000000000042",
        parameters: Mapping[str, str] | None = None,
        audio_format: AudioFormat = TELEPHONE_ULAW,
        quiet_ms: int | None = None,
    ) -> None:
        super().__init__(
            TelephoneLine(script, audio_format, quiet_ms=quiet_ms), call_id or DEFAULT_CALL_ID
        )
        self._stream_id = stream_id
        self._extra_headers = ";".join(f"{k}={v}" for k, v in (parameters or {}).items())
        self._sequence = 0

    def opening(self) -> list[str]:
        """The ``start`` event."""
        wire = self._line.wire
        start = {
            "callId": self._call_id,
            "streamId": self._stream_id,
            "accountId": "MA0000000000000000042",
            "tracks": ["inbound"],
            "mediaFormat": {
                "encoding": CONTENT_TYPES[wire.encoding],
                "sampleRate": wire.sample_rate,
            },
        }
        return [self._event("start", start=start, extra_headers=self._extra_headers)]

    def closing(self) -> None:
        """Plivo sends no ``stop``: the stream ends when the socket closes."""
        return None

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, answer the checkpoints now played, send audio."""
        now_ms = self._line.now_ms
        frame, played = self._line.tick()
        media = {
            "track": "inbound",
            "timestamp": str(_EPOCH_MS + now_ms),
            "chunk": now_ms // FRAME_MS + 1,
            "payload": base64.b64encode(frame).decode("ascii"),
        }
        media_event = self._event(
            "media", streamId=self._stream_id, media=media, extra_headers=self._extra_headers
        )
        return [*self._played(played), media_event]

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway event; events to send back at once (playedStream, clearedAudio)."""
        data = _parse(message)
        match data.get("event"):
            case "playAudio":
                self._line.playback.queue_audio(self._audio(data))
            case "checkpoint":
                name = self._named(data)
                return self._played(self._line.playback.queue_mark(name, self._line.now_ms))
            case "clearAudio":
                self._check_stream(data)
                self._line.clear(drop_marks=True)
                return [self._event("clearedAudio", streamId=self._stream_id)]
            case other:
                raise RemoteProtocolError(f"plivo does not accept event {other!r}")
        return []

    def _audio(self, data: dict[str, Any]) -> bytes:
        """playAudio's payload, in the stream's own content type and rate."""
        media = data.get("media")
        if not isinstance(media, dict):
            raise RemoteProtocolError("plivo: playAudio needs a media object")
        wire = self._line.wire
        wanted = (CONTENT_TYPES[wire.encoding], wire.sample_rate)
        if (media.get("contentType"), media.get("sampleRate")) != wanted:
            raise RemoteProtocolError(f"plivo: playAudio must be {wanted[0]} at {wanted[1]} Hz")
        try:
            payload = base64.b64decode(media["payload"], validate=True)
        except (KeyError, TypeError, binascii.Error) as error:
            raise RemoteProtocolError(f"plivo: bad playAudio payload: {error}") from error
        if not payload or len(payload) % wire.bytes_per_sample:
            raise RemoteProtocolError(f"plivo: playAudio of {len(payload)} bytes")
        return payload

    def _named(self, data: dict[str, Any]) -> str:
        self._check_stream(data)
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise RemoteProtocolError("plivo: a checkpoint needs a name")
        return name

    def _check_stream(self, data: dict[str, Any]) -> None:
        if data.get("streamId") != self._stream_id:
            raise RemoteProtocolError(f"plivo: streamId {data.get('streamId')!r} is not ours")

    def _played(self, names: list[str]) -> list[str]:
        return [self._event("playedStream", streamId=self._stream_id, name=n) for n in names]

    def _event(self, event: str, **body: object) -> str:
        self._sequence += 1
        return json.dumps({"event": event, "sequenceNumber": self._sequence, **body})


def _parse(message: str | bytes) -> dict[str, Any]:
    if isinstance(message, bytes):
        raise RemoteProtocolError("plivo audio streams take JSON text frames, not binary")
    try:
        data = json.loads(message)
    except json.JSONDecodeError as error:
        raise RemoteProtocolError(f"plivo: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise RemoteProtocolError("plivo: an event must be a JSON object")
    return data

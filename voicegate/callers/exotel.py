"""The provider side of an Exotel Voicebot applet stream, emulated.

What Exotel does (shared/spec/providers.md §b.6; the protocol page
https://developer.exotel.com/docs/agentstream/websocket-protocol and the applet page
https://developer.exotel.com/docs/agentstream/stream-voicebot-applet): ``connected``, then
``start`` (snake_case, ``stream_sid`` at the top and inside, ``call_sid``, ``from``, ``to``,
``custom_parameters``, a ``media_format`` with string values), then one ``media`` event of
caller audio about every 100 ms, silence included. Bot audio arrives as ``media`` events of
whole 320-byte blocks, at least 3.2 kB and at most 100 kB each (a chunk outside those rules
is refused here, where Exotel would distort it), played in order; a ``mark`` is answered once
the audio before it has played; ``clear`` drops the queue. Exotel does not say whether a clear
answers pending marks; this emulation drops them, the stricter case for the gateway. When the
caller hangs up, Exotel sends ``stop``.

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
from voicegate.codecs.exotel import (
    CHUNK_MULTIPLE,
    MAX_CHUNK_BYTES,
    MIN_CHUNK_BYTES,
    SAMPLE_RATES,
)
from voicegate.errors import RemoteProtocolError
from voicegate.types import AudioEncoding, AudioFormat

DEFAULT_CALL_SID = "c0ffee00000000000000000000000042"
#: "Exotel ... streams raw PCM audio every ~100 ms" (protocol page).
MEDIA_MS = 100


class ExotelCaller(LineCaller):
    """One emulated Voicebot applet call: 100 ms media out, bot audio in, marks and clear."""

    def __init__(
        self,
        script: CallerScript,
        *,
        call_sid: str = "",  # empty: DEFAULT_CALL_SID
        stream_sid: str = "MZ00000000000000000000000042",
        parameters: Mapping[str, str] | None = None,
        quiet_ms: int | None = None,
    ) -> None:
        if script.sample_rate not in SAMPLE_RATES:
            raise ValueError(f"an Exotel caller streams PCM16 at one of {SAMPLE_RATES} Hz")
        wire = AudioFormat(AudioEncoding.L16, script.sample_rate)
        super().__init__(
            TelephoneLine(script, wire, quiet_ms=quiet_ms), call_sid or DEFAULT_CALL_SID
        )
        self._stream_sid = stream_sid
        self._parameters = dict(parameters or {})
        self._sequence = 0
        self._pending = bytearray()  # caller audio not yet sent (media goes out per 100 ms)
        self._chunks = 0

    def opening(self) -> list[str]:
        """``connected`` and ``start``."""
        start = {
            "stream_sid": self._stream_sid,
            "call_sid": self.call_id,
            "account_sid": "exotel-emulated-account",
            "from": "+919876500042",
            "to": "+918047400042",
            "custom_parameters": self._parameters,
            "media_format": {
                "encoding": "audio/x-raw",
                "sample_rate": str(self.sample_rate),
                "bit_rate": "16",
            },
        }
        return [json.dumps({"event": "connected"}), self._event("start", start=start)]

    def closing(self) -> str:
        """The caller hung up: ``stop``."""
        return self._event("stop", stop={"call_sid": self.call_id, "reason": "callended"})

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, answer the marks now played, send 100 ms of audio."""
        frame, played = self._line.tick()
        self._pending += frame
        messages: list[str | bytes] = [*self._marked(played)]
        if self._line.now_ms % MEDIA_MS == 0:
            messages.append(self._media())
        return messages

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway event; events to send back at once (marks already played)."""
        data = _parse(message)
        if data.get("stream_sid") != self._stream_sid:
            raise RemoteProtocolError(f"exotel: stream_sid {data.get('stream_sid')!r} is not ours")
        match data.get("event"):
            case "media":
                self._line.playback.queue_audio(_chunk(data))
            case "mark":
                mark = data.get("mark")
                name = mark.get("name") if isinstance(mark, dict) else None
                if not isinstance(name, str) or not name:
                    raise RemoteProtocolError("exotel: a mark needs mark.name")
                return self._marked(self._line.playback.queue_mark(name, self._line.now_ms))
            case "clear":
                self._line.clear(drop_marks=True)
            case other:
                raise RemoteProtocolError(f"exotel does not accept event {other!r}")
        return []

    def _media(self) -> str:
        self._chunks += 1
        timestamp = self._line.now_ms - len(self._pending) // self._line.frame_bytes * FRAME_MS
        media = {
            "chunk": str(self._chunks),
            "timestamp": str(timestamp),
            "payload": base64.b64encode(bytes(self._pending)).decode("ascii"),
        }
        self._pending.clear()
        return self._event("media", stream_sid=self._stream_sid, media=media)

    def _marked(self, names: list[str]) -> list[str]:
        return [self._event("mark", stream_sid=self._stream_sid, mark={"name": n}) for n in names]

    def _event(self, event: str, **body: object) -> str:
        self._sequence += 1
        return json.dumps({"event": event, "sequence_number": str(self._sequence), **body})


def _chunk(data: dict[str, Any]) -> bytes:
    """A media event's audio, held to the applet page's chunk rules."""
    media = data.get("media")
    if not isinstance(media, dict):
        raise RemoteProtocolError("exotel: a media event needs a media object")
    try:
        payload = base64.b64decode(media["payload"], validate=True)
    except (KeyError, TypeError, binascii.Error) as error:
        raise RemoteProtocolError(f"exotel: bad media payload: {error}") from error
    size = len(payload)
    if size < MIN_CHUNK_BYTES or size > MAX_CHUNK_BYTES or size % CHUNK_MULTIPLE:
        raise RemoteProtocolError(
            f"exotel: a {size}-byte chunk breaks the rules (>= {MIN_CHUNK_BYTES}, "
            f"<= {MAX_CHUNK_BYTES}, a multiple of {CHUNK_MULTIPLE})"
        )
    return payload


def _parse(message: str | bytes) -> dict[str, Any]:
    if isinstance(message, bytes):
        raise RemoteProtocolError("exotel takes JSON text frames, not binary")
    try:
        data = json.loads(message)
    except json.JSONDecodeError as error:
        raise RemoteProtocolError(f"exotel: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise RemoteProtocolError("exotel: an event must be a JSON object")
    return data

"""The Asterisk side of a ``chan_websocket`` channel, emulated (``Dial(WebSocket/...)``).

What Asterisk does (shared/spec/providers.md §b.10;
https://docs.asterisk.org/Configuration/Channel-Drivers/WebSocket and
``channels/chan_websocket.c``): once the gateway accepts the upgrade it sends ``MEDIA_START``
(plain text or JSON, as ``chan_websocket.conf`` or the dial string's ``f(...)`` chose), then
one BINARY frame of the channel's codec per 20 ms, silence included. Bot audio arrives as
BINARY messages of any size that Asterisk cuts into ``optimal_frame_size`` frames (a partial
frame is dropped) and plays one per 20 ms; a message over 65,500 bytes closes the socket and
hangs up. ``MARK_MEDIA`` queues a mark behind that audio and ``MEDIA_MARK_PROCESSED`` answers
it once the audio before it has played; ``FLUSH_MEDIA`` drops the queue, marks included, and
ends a pause; ``PAUSE_MEDIA``/``CONTINUE_MEDIA`` play silence while keeping the queue;
``HANGUP`` hangs the channel up and closes the socket. At ~900 queued frames Asterisk sends
``MEDIA_XOFF`` and drops media past ~1000 frames; below ~800 it sends ``MEDIA_XON``. TEXT
commands longer than 128 bytes are ignored by Asterisk; this emulation refuses them, and any
command it does not expect the gateway to send, so a gateway bug fails loudly.

Pure and synchronous: a driver (``callers/driver.py``) moves the messages over a WebSocket.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from voicegate.callers.line_caller import LineCaller
from voicegate.callers.script import CallerScript
from voicegate.callers.telephone import TelephoneLine
from voicegate.codecs.asterisk import FORMATS, MAX_MEDIA_BYTES
from voicegate.codecs.asterisk_wire import MAX_COMMAND_BYTES, ControlFormat
from voicegate.errors import RemoteProtocolError

DEFAULT_CHANNEL_ID = "1761245643.42"
#: chan_websocket.c QUEUE_LENGTH_MAX, QUEUE_LENGTH_XOFF_LEVEL, QUEUE_LENGTH_XON_LEVEL (frames).
QUEUE_MAX, XOFF_LEVEL, XON_LEVEL = 1000, 900, 800


class AsteriskCaller(LineCaller):
    """One emulated chan_websocket channel: binary media, marks, flush, pause, hang-up."""

    def __init__(
        self,
        script: CallerScript,
        *,
        channel_id: str = "",  # empty: DEFAULT_CHANNEL_ID
        codec: str = "",  # ulaw at 8 kHz, slin16 at 16 kHz unless given
        control: ControlFormat = ControlFormat.JSON,
        parameters: Mapping[str, str] | None = None,
        quiet_ms: int | None = None,
    ) -> None:
        codec = codec or ("slin16" if script.sample_rate == 16000 else "ulaw")
        if codec not in FORMATS or FORMATS[codec].sample_rate != script.sample_rate:
            raise ValueError(f"an Asterisk caller at {script.sample_rate} Hz cannot use {codec!r}")
        line = TelephoneLine(script, FORMATS[codec], quiet_ms=quiet_ms)
        super().__init__(line, channel_id or DEFAULT_CHANNEL_ID)
        self._codec = codec
        self._control = control
        self._variables = dict(parameters or {})  # the dialplan's channel variables
        self._paused = False
        self._full = False  # MEDIA_XOFF sent, MEDIA_XON not yet
        self.hung_up_ms: int | None = None  # when the gateway sent HANGUP
        self.dropped_bytes = 0  # bot audio Asterisk would have dropped (partial frames, XOFF)

    def opening(self) -> list[str]:
        """MEDIA_START, in the call's control format."""
        fields: dict[str, object] = {
            "connection_id": "3f6c2b1e-0000-4000-8000-000000000042",
            "channel": "WebSocket/voicegate/0x5140001a0040",
            "channel_id": self.call_id,
            "format": self._codec,
            "optimal_frame_size": self._line.frame_bytes,
            "ptime": 20,
        }
        if self._control is ControlFormat.PLAIN:
            return [" ".join(["MEDIA_START", *(f"{k}:{v}" for k, v in fields.items())])]
        return [self._event("MEDIA_START", **fields, channel_variables=self._variables)]

    def closing(self) -> None:
        """Asterisk sends no stop: hanging up closes the socket."""
        return None

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play a frame (silence while paused), answer marks, send caller audio."""
        frame, played = self._line.tick(held=self._paused)
        messages: list[str | bytes] = [
            self._event("MEDIA_MARK_PROCESSED", correlation_id=name) for name in played
        ]
        if self._full and self._queued_frames() < XON_LEVEL:
            self._full = False
            messages.append(self._event("MEDIA_XON"))
        return [*messages, frame]

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway message; messages Asterisk sends back at once."""
        if isinstance(message, bytes):
            return self._media(message)
        name, argument = self._command(message)
        match name:
            case "MARK_MEDIA":
                marks = self._line.playback.queue_mark(argument, self._line.now_ms)
                return [self._event("MEDIA_MARK_PROCESSED", correlation_id=m) for m in marks]
            case "FLUSH_MEDIA":  # the queued marks go with the frames (chan_websocket.c)
                self._line.clear(drop_marks=True)
                self._paused = False
            case "PAUSE_MEDIA" | "CONTINUE_MEDIA":
                self._paused = name == "PAUSE_MEDIA"
                self._line.playback.note(self._line.now_ms, name.lower())
            case "HANGUP":
                self.hung_up_ms = self._line.now_ms
                self._line.playback.note(self._line.now_ms, "hangup_received")
            case other:
                raise RemoteProtocolError(f"asterisk: this emulation expects no {other!r}")
        return []

    def finished(self, deadline_ms: int) -> bool:
        """The script and the bot are done, or the gateway hung the channel up."""
        return self.hung_up_ms is not None or super().finished(deadline_ms)

    def _media(self, payload: bytes) -> list[str]:
        """Bot audio: whole frames queued, a partial one dropped, as chan_websocket does."""
        if len(payload) > MAX_MEDIA_BYTES:
            raise RemoteProtocolError(
                f"asterisk: a {len(payload)}-byte message closes the socket (max 65,500)"
            )
        frame = self._line.frame_bytes
        whole = len(payload) // frame * frame
        if self._queued_frames() >= QUEUE_MAX:
            whole = 0
        self.dropped_bytes += len(payload) - whole
        self._line.playback.queue_audio(payload[:whole])
        if not self._full and self._queued_frames() >= XOFF_LEVEL:
            self._full = True
            return [self._event("MEDIA_XOFF")]
        return []

    def _queued_frames(self) -> int:
        return self._line.playback.buffered_bytes // self._line.frame_bytes

    def _command(self, text: str) -> tuple[str, str]:
        """A TEXT command's name and its correlation id, in the call's control format."""
        if len(text.encode("utf-8")) > MAX_COMMAND_BYTES:
            raise RemoteProtocolError(f"asterisk: a {len(text)}-character command is ignored")
        if self._control is ControlFormat.PLAIN:
            name, _, argument = text.strip().partition(" ")
            return name, argument
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise RemoteProtocolError(f"asterisk: not JSON: {error}") from error
        if not isinstance(data, dict) or not isinstance(data.get("command"), str):
            raise RemoteProtocolError("asterisk: a JSON command needs a 'command' string")
        return data["command"], str(data.get("correlation_id", ""))

    def _event(self, name: str, **fields: object) -> str:
        """An event in the call's control format (chan_websocket.c _create_event_*)."""
        if self._control is ControlFormat.JSON:
            return json.dumps({"event": name, "channel_id": self.call_id, **fields})
        return " ".join([name, *(str(value) for value in fields.values())])

"""The provider side of a Twilio Media Stream, emulated on its own media clock.

Used by ``voicegate replay`` and the end-to-end tests to stand in for Twilio
(shared/spec/providers.md §b.1): every 20 ms ``tick`` sends one ``media`` message of caller
audio (μ-law silence when the caller is quiet, as Twilio does) and plays 20 ms of the bot audio
the gateway sent. A ``mark`` is echoed once the audio queued before it has played; ``clear``
drops the buffered audio and echoes every pending mark at once, as Twilio documents. What was
played is kept, so both sides of the call can be written to a WAV file.

Pure and synchronous: a driver moves the messages over a real WebSocket.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from typing import Any

from voicegate.audio.g711 import samples_to_ulaw_bytes, ulaw_bytes_to_samples
from voicegate.audio.pcm import Samples
from voicegate.callers.echo import EchoPath
from voicegate.callers.hangup import quiet_after_cues
from voicegate.callers.script import CallerScript, EncodedScript
from voicegate.errors import RemoteProtocolError

FRAME_MS = 20
FRAME_BYTES = 160  # 20 ms of μ-law at 8 kHz
SAMPLE_RATE = 8000
_SILENT_FRAME = bytes([0xFF]) * FRAME_BYTES
_SILENT_PAYLOAD = base64.b64encode(_SILENT_FRAME).decode("ascii")


class TwilioCaller:
    """One emulated Twilio call: caller audio out, bot audio in, marks and clear honoured."""

    sample_rate = SAMPLE_RATE

    def __init__(
        self,
        script: CallerScript,
        *,
        call_sid: str = "CA00000000000000000000000000000042",
        stream_sid: str = "MZ00000000000000000000000000000042",
        parameters: dict[str, str] | None = None,
        quiet_ms: int | None = None,
        echo: EchoPath | None = None,
    ) -> None:
        if script.sample_rate != SAMPLE_RATE:
            raise ValueError("a Twilio caller's script must be at 8000 Hz")
        self._script = script
        self._frames = EncodedScript(script, samples_to_ulaw_bytes, FRAME_MS)
        self._call_sid = call_sid
        self._stream_sid = stream_sid
        self._stream_sid_json = json.dumps(stream_sid)
        self._parameters = parameters or {}
        self._quiet_ms = quiet_ms  # see callers/hangup.py; None: hang up once the script ends
        self._echo = echo  # the bot's voice coming back into the microphone (callers/echo.py)
        self._buffer = bytearray()  # bot audio waiting to be played
        self._marks: deque[tuple[int, str]] = deque()  # (byte position, name)
        self._queued = 0  # bytes of bot audio received, ever
        self._played = 0  # bytes of bot audio played or discarded, ever
        self._sequence = 0
        self._playing = False
        self.now_ms = 0
        self.caller_track = bytearray()  # what the caller said, μ-law, one frame per tick
        self.bot_track = bytearray()  # what the caller heard of the bot, aligned with it
        self.clears: list[int] = []  # media times at which a clear arrived
        self.bot_started_ms: list[int] = []  # media times at which bot audio began playing
        self.bot_drained_ms: list[int] = []  # media times at which bot audio ran out (not clear)
        self.observed: list[dict[str, Any]] = []  # the caller-side timeline (docs/timeline.md)

    @property
    def call_id(self) -> str:
        """The callSid this caller sends: the gateway's id for the call."""
        return self._call_sid

    def opening(self) -> list[str]:
        """The ``connected`` and ``start`` messages."""
        connected = {"event": "connected", "protocol": "Call", "version": "1.0.0"}
        start = {
            "accountSid": "AC00000000000000000000000000000042",
            "streamSid": self._stream_sid,
            "callSid": self._call_sid,
            "tracks": ["inbound"],
            "customParameters": self._parameters,
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
        }
        return [json.dumps(connected), self._message("start", start=start)]

    def closing(self) -> str:
        """The ``stop`` message."""
        return self._message("stop", stop={"accountSid": "AC0", "callSid": self._call_sid})

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, echo marks now played, send caller audio."""
        echoes = self._play_frame()
        frame = self._caller_frame()
        self.caller_track += frame
        media = self._media_message(frame)
        self.now_ms += FRAME_MS
        return [*echoes, media]

    def _caller_frame(self) -> bytes:
        """The μ-law of what the caller says in the tick at ``now_ms``."""
        if self._echo is None:  # each cue encoded once; silence is a constant frame
            return self._frames.frame(self.now_ms, self.bot_started_ms)
        samples = self._script.frame(self.now_ms, FRAME_MS, self.bot_started_ms)
        samples = self._echo.mix(samples)
        # Most ticks are digital silence, whose μ-law is known: no encoding (~4 µs a tick).
        return samples_to_ulaw_bytes(samples) if samples.any() else _SILENT_FRAME

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway message; returns messages to send back at once (clear echoes)."""
        data = _parse(message)
        match data.get("event"):
            case "media":
                payload = _payload(data)
                self._buffer += payload
                self._queued += len(payload)
            case "mark":
                self._marks.append((self._queued, str(data["mark"]["name"])))
                self._observe("mark_received", name=self._marks[-1][1])
            case "clear":
                return self._clear()
            case other:
                raise RemoteProtocolError(f"Twilio does not accept event {other!r}")
        return []

    def finished(self, deadline_ms: int) -> bool:
        """The script has played out and no bot audio is pending (or the deadline passed).

        With ``quiet_ms``, the bot must also have answered and gone quiet (callers/hangup.py).
        """
        done = self._script.finished(self.now_ms, self.bot_started_ms, deadline_ms)
        return done and (self._settled() or self.now_ms >= deadline_ms)

    def _settled(self) -> bool:
        if self._buffer:
            return False
        if self._quiet_ms is None:
            return True
        return quiet_after_cues(
            self._script, self.now_ms, self.bot_started_ms, self.bot_drained_ms, self._quiet_ms
        )

    @property
    def buffered_ms(self) -> int:
        """Bot audio waiting at the provider."""
        return len(self._buffer) // (FRAME_BYTES // FRAME_MS)

    def tracks(self) -> tuple[Samples, Samples]:
        """Caller and bot audio as the caller's side experienced them, 8 kHz PCM16."""
        return ulaw_bytes_to_samples(self.caller_track), ulaw_bytes_to_samples(self.bot_track)

    def _play_frame(self) -> list[str]:
        chunk = bytes(self._buffer[:FRAME_BYTES])
        del self._buffer[:FRAME_BYTES]
        if chunk and not self._playing:
            self.bot_started_ms.append(self.now_ms)
            self._observe("bot_audio_started")
        if self._playing and not chunk:
            self.bot_drained_ms.append(self.now_ms)
            self._observe("bot_audio_drained")
        self._playing = bool(chunk)
        self._played += len(chunk)
        played = chunk + _SILENT_FRAME[len(chunk) :]
        self.bot_track += played
        if self._echo is not None:
            self._echo.heard(ulaw_bytes_to_samples(played))
        return self._echo_marks(up_to=self._played)

    def _clear(self) -> list[str]:
        self.clears.append(self.now_ms)
        self._observe("clear_received", dropped_ms=self.buffered_ms)
        self._played = self._queued  # discarded audio counts as done for its marks
        self._buffer.clear()
        self._playing = False
        return self._echo_marks(up_to=self._queued)

    def _echo_marks(self, *, up_to: int) -> list[str]:
        echoes = []
        while self._marks and self._marks[0][0] <= up_to:
            _, name = self._marks.popleft()
            echoes.append(self._message("mark", mark={"name": name}))
            self._observe("mark_echoed", name=name)
        return echoes

    def _observe(self, event: str, **fields: Any) -> None:
        self.observed.append({"t_ms": self.now_ms, "event": event, **fields})

    def _media_message(self, frame: bytes) -> str:
        """The ``media`` message of the tick at ``now_ms``: the text ``_message`` gives.

        Filled in, not built by ``json.dumps`` from nested dicts: it is 50 messages per
        second of every replay, and the template costs an eighth. Every value but the
        stream sid is digits or base64, which JSON needs no escapes for.
        """
        self._sequence += 1
        payload = (
            _SILENT_PAYLOAD if frame == _SILENT_FRAME else base64.b64encode(frame).decode("ascii")
        )
        return (
            f'{{"event": "media", "sequenceNumber": "{self._sequence}", '
            f'"streamSid": {self._stream_sid_json}, "media": {{"track": "inbound", '
            f'"chunk": "{self.now_ms // FRAME_MS + 1}", "timestamp": "{self.now_ms}", '
            f'"payload": "{payload}"}}}}'
        )

    def _message(self, event: str, **body: object) -> str:
        self._sequence += 1
        header = {"event": event, "sequenceNumber": str(self._sequence)}
        return json.dumps({**header, "streamSid": self._stream_sid, **body})


def _parse(message: str | bytes) -> dict[str, Any]:
    if isinstance(message, bytes):
        raise RemoteProtocolError("Twilio media streams carry JSON text frames, not binary")
    try:
        data = json.loads(message)
    except json.JSONDecodeError as error:
        raise RemoteProtocolError(f"not JSON: {error}") from error
    if not isinstance(data, dict):
        raise RemoteProtocolError("a Twilio message must be a JSON object")
    return data


def _payload(data: dict[str, Any]) -> bytes:
    try:
        return base64.b64decode(data["media"]["payload"], validate=True)
    except (KeyError, TypeError, binascii.Error) as error:
        raise RemoteProtocolError(f"bad media payload: {error}") from error

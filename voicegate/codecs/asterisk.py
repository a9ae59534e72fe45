"""Asterisk's WebSocket channel driver (``chan_websocket``, 20.16/21.11/22.6/23+), sans-I/O.

Wire protocol: shared/spec/providers.md §b.10, checked against
https://docs.asterisk.org/Configuration/Channel-Drivers/WebSocket and the driver itself
(``channels/chan_websocket.c``). ``Dial(WebSocket/<client>/c(ulaw))`` makes Asterisk connect
to the gateway with the ``websocket_client.conf`` client named there. Its first TEXT message
is ``MEDIA_START`` (the channel, its unique id, ``format``, ``optimal_frame_size``, ``ptime``
and, in JSON, ``channel_variables``); BINARY messages then carry raw media in the channel's
codec both ways (``ulaw``/``alaw``: 160 bytes per 20 ms; ``slin``/``slin16``: 16-bit PCM in
host byte order, little-endian on the x86 and ARM hosts Asterisk runs on). TEXT messages are
control, in the plain-text or the JSON format (codecs/asterisk_wire.py); the codec answers in
the format ``MEDIA_START`` came in.

* Flush: ``FLUSH_MEDIA`` drops every queued frame, marks included, so flushed marks never
  come back (chan_websocket.c handle_command); the playout ledger settles them at the flush.
* Acknowledgements: ``MARK_MEDIA <correlation_id>`` queues a mark behind the audio sent so
  far; ``MEDIA_MARK_PROCESSED`` returns it when it reaches the front of the queue, so what
  the caller heard comes from Asterisk, not an estimate.
* Pause: ``PAUSE_MEDIA`` plays silence and keeps the queue; ``CONTINUE_MEDIA`` resumes it.
* DTMF: ``DTMF_END digit:5`` / ``{"event":"DTMF_END","digit":"5"}``. Hang-up: ``HANGUP``.
* Framing: outside a ``START_MEDIA_BUFFERING`` bulk transfer Asterisk cuts a BINARY message
  into ``optimal_frame_size`` frames and drops the remainder, so every payload is padded with
  silence to whole frames. A message over 65,500 bytes closes the socket and hangs up, so
  longer payloads go out in several messages.
* Flow control: ``MEDIA_XOFF`` (queue at ~900 frames) means media sent now is dropped; the
  codec holds audio and marks, in order, until ``MEDIA_XON``, which releases them as a
  :class:`ProtocolReply`. The hold is bounded (``max_held_ms``): a peer that never sends XON
  is a protocol error, not a growing buffer.

There is no stop message: the channel hangs up by closing the socket.
"""

from __future__ import annotations

from collections.abc import Mapping

from voicegate.codecs.asterisk_wire import Control, ControlFormat, command, format_of, parse_event
from voicegate.codecs.base import CallPhase, Capabilities, FrameLimits
from voicegate.codecs.commands import (
    ClearAudio,
    Command,
    Hangup,
    PausePlayback,
    PlayAudio,
    ResumePlayback,
    SetMark,
)
from voicegate.codecs.events import (
    AudioReceived,
    CallStarted,
    DtmfReceived,
    Event,
    JsonValue,
    MarkReached,
    ProtocolReply,
    ProviderError,
)
from voicegate.codecs.stream import StreamCodec
from voicegate.codecs.wire import DTMF_DIGITS, check_size, show
from voicegate.errors import ConfigError, LocalProtocolError, RemoteProtocolError
from voicegate.types import SILENCE_BYTE, AudioEncoding, AudioFormat

#: Asterisk's packetisation for these codecs; MEDIA_START's ``ptime`` says so since 20.18.
DEFAULT_PTIME_MS = 20
#: MEDIA_START ``format`` names (Asterisk's format names) this gateway takes.
FORMATS = {
    "ulaw": AudioFormat(AudioEncoding.PCMU, 8000),
    "alaw": AudioFormat(AudioEncoding.PCMA, 8000),
    "slin": AudioFormat(AudioEncoding.L16, 8000),
    "slin16": AudioFormat(AudioEncoding.L16, 16000),
}
#: "The maximum websocket message size ... is 65500 bytes" (the driver page's warning).
MAX_MEDIA_BYTES = 65_500
#: Inbound: Asterisk sends one frame per message; MEDIA_START's channel variables may be long.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
#: How much bot audio MEDIA_XOFF may hold back before the call is ended (Asterisk's XON comes
#: once its queue drains from ~900 to ~800 frames: two seconds of audio at the least).
DEFAULT_MAX_HELD_MS = 10_000
#: Events that need nothing from the gateway (answers to commands it does not send).
_QUIET_EVENTS = frozenset({"MEDIA_BUFFERING_COMPLETED", "QUEUE_DRAINED", "STATUS"})


def asterisk_capabilities(audio_format: AudioFormat) -> Capabilities:
    """What a chan_websocket channel can do, carrying ``audio_format`` both ways."""
    width = audio_format.bytes_per_sample
    return Capabilities(
        dialect="asterisk",
        flush_verb="FLUSH_MEDIA",
        hangup_verb="HANGUP",
        playback_acks=True,  # MARK_MEDIA -> MEDIA_MARK_PROCESSED
        pause=True,  # PAUSE_MEDIA / CONTINUE_MEDIA
        dtmf=True,
        binary_audio=True,
        inbound_formats=tuple(FORMATS.values()),
        outbound_format=audio_format,
        # Any whole number of samples: send() pads to whole frames and splits long payloads.
        outbound_frames=FrameLimits(min_bytes=width, multiple_of=width),
    )


class AsteriskCodec(StreamCodec):
    """One chan_websocket channel: MEDIA_START, binary media, marks, flush, pause, XOFF/XON."""

    def __init__(
        self,
        call_id: str,
        *,
        parameters: Mapping[str, str] | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_held_ms: int = DEFAULT_MAX_HELD_MS,
    ) -> None:
        super().__init__(
            asterisk_capabilities(FORMATS["ulaw"]), max_message_bytes=max_message_bytes
        )
        if max_held_ms < 0:
            raise ConfigError(f"asterisk max_held_ms must not be negative, got {max_held_ms}")
        self._call_id = call_id  # the gateway's id, unless MEDIA_START names the channel
        self._parameters = dict(parameters or {})  # the upgrade's query (dial string v(...))
        self._control = ControlFormat.PLAIN
        self._frame_bytes = FORMATS["ulaw"].bytes_for_ms(DEFAULT_PTIME_MS)
        self._ptime_ms = DEFAULT_PTIME_MS
        self._max_held_ms = max_held_ms
        self._xoff = False
        self._held: list[str | bytes] = []  # audio and marks withheld since MEDIA_XOFF
        self._held_bytes = 0

    @property
    def control_format(self) -> ControlFormat:
        """The control message format MEDIA_START came in (and commands go out in)."""
        return self._control

    @property
    def holding(self) -> bool:
        """Whether MEDIA_XOFF is in force (audio and marks are held until MEDIA_XON)."""
        return self._xoff

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message from Asterisk into events."""
        check_size(message, self._max_message_bytes, "asterisk")
        if isinstance(message, bytes):
            return [self._audio(message)]
        if self.phase is CallPhase.AWAITING_START:
            control = format_of(message)
            started = self._on_media_start(parse_event(message, control))
            self._control = control
            return [started]
        event = parse_event(message, self._control)
        self._require_started(event.name)
        return self._on_event(event)

    def _audio(self, payload: bytes) -> AudioReceived:
        if self.phase is CallPhase.AWAITING_START:
            raise RemoteProtocolError(
                f"asterisk: a BINARY message of {len(payload)} bytes arrived before MEDIA_START"
            )
        self._require_started("media")
        audio_format = self._capabilities.outbound_format
        if not payload or len(payload) % audio_format.bytes_per_sample:
            raise RemoteProtocolError(
                f"asterisk: a BINARY message of {len(payload)} bytes is not whole samples"
            )
        return AudioReceived(payload=payload, audio_format=audio_format)

    def _on_media_start(self, start: Control) -> CallStarted:
        """MEDIA_START: the channel's codec and frame size; its ids and variables as metadata."""
        if start.name != "MEDIA_START":
            raise RemoteProtocolError(
                f"asterisk: the first TEXT message must be MEDIA_START, got {show(start.name)}"
            )
        name = start.text("format")
        audio_format = FORMATS.get(name)
        if audio_format is None:
            raise start.error("format", f"must be one of {', '.join(FORMATS)}, got {show(name)}")
        frame = start.integer("optimal_frame_size")
        if not 0 < frame <= MAX_MEDIA_BYTES or frame % audio_format.bytes_per_sample:
            raise start.error("optimal_frame_size", f"is not a frame of {name}: {frame}")
        channel_id = start.optional_text("channel_id")
        connection_id = start.optional_text("connection_id")
        metadata: dict[str, JsonValue] = {**self._parameters, **_variables(start)}
        for key in ("connection_id", "channel", "channel_id", "format"):
            if key in start.fields:
                metadata[key] = start.fields[key]
        ptime = start.integer("ptime", DEFAULT_PTIME_MS)  # absent before 20.18 / 22.8 / 23.2
        if not 0 < ptime <= 1000:
            raise start.error("ptime", f"must be 1-1000 ms, got {ptime}")
        # Every check above may refuse the message; only now does the codec change.
        self._frame_bytes = frame
        self._ptime_ms = ptime
        self._capabilities = asterisk_capabilities(audio_format)
        self._started()
        return CallStarted(
            stream_id=connection_id or self._call_id,
            call_id=channel_id or self._call_id,
            audio_format=audio_format,
            metadata=metadata,
        )

    def _on_event(self, event: Control) -> list[Event]:
        match event.name:
            case "MEDIA_MARK_PROCESSED":
                return [MarkReached(event.correlation_id())]
            case "DTMF_END":
                return [DtmfReceived(_digit(event))]
            case "MEDIA_XOFF":
                self._xoff = True
                return []
            case "MEDIA_XON":
                return self._released()
            case "ERROR":  # e.g. a command Asterisk could not parse; the call goes on
                return [ProviderError(str(event.fields.get("error_text", event.argument)))]
            case "MEDIA_START":
                self._check_startable("MEDIA_START")
        if event.name in _QUIET_EVENTS:
            return []
        return self._ignored()

    def _released(self) -> list[Event]:
        """MEDIA_XON: send what XOFF held, in order."""
        held, self._held, self._held_bytes, self._xoff = self._held, [], 0, False
        return [ProtocolReply(tuple(held))] if held else []

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """Write one command: binary frames, or a control message in the call's format."""
        match command:
            case PlayAudio(payload=payload):
                self._refuse_before_start(command)
                return self._queue(self._media(payload))
            case SetMark(name=name):
                self._refuse_before_start(command)
                if not name:
                    raise LocalProtocolError("asterisk: SetMark needs a non-empty name")
                return self._queue([self._command("MARK_MEDIA", correlation_id=name)])
            case ClearAudio():
                flush = self._control_message(command, "FLUSH_MEDIA")
                self._held, self._held_bytes = [], 0  # never sent: nothing for Asterisk to drop
                return flush
            case PausePlayback():
                return self._control_message(command, "PAUSE_MEDIA")
            case ResumePlayback():
                return self._control_message(command, "CONTINUE_MEDIA")
            case Hangup():
                if self.phase is CallPhase.AWAITING_START:
                    return []  # a refused connection: closing the socket is the answer
                return self._control_message(command, "HANGUP")
            case _:
                return self._common(command)

    def _media(self, payload: bytes) -> list[str | bytes]:
        """``payload`` padded with silence to whole frames, in messages Asterisk accepts."""
        width = self._capabilities.outbound_format.bytes_per_sample
        if not payload or len(payload) % width:
            raise LocalProtocolError(
                f"asterisk: PlayAudio payload of {len(payload)} bytes is not whole samples"
            )
        frame = self._frame_bytes
        short = -len(payload) % frame
        silence = SILENCE_BYTE[self._capabilities.outbound_format.encoding]
        padded = payload + silence * short
        step = MAX_MEDIA_BYTES // frame * frame
        return [padded[at : at + step] for at in range(0, len(padded), step)]

    def _queue(self, messages: list[str | bytes]) -> list[str | bytes]:
        """Messages bound for Asterisk's frame queue: now, or held while MEDIA_XOFF lasts."""
        if self.phase is CallPhase.ENDED:
            return []
        if not self._xoff:
            return messages
        held_bytes = self._held_bytes + sum(len(m) for m in messages if isinstance(m, bytes))
        held_ms = held_bytes // self._frame_bytes * self._ptime_ms
        if held_ms > self._max_held_ms:  # the peer's fault: it never said MEDIA_XON
            raise RemoteProtocolError(
                f"asterisk: MEDIA_XOFF held back {held_ms} ms of bot audio without a MEDIA_XON "
                f"(limit {self._max_held_ms} ms)"
            )
        self._held.extend(messages)
        self._held_bytes = held_bytes
        return []

    def _control_message(self, sent: Command, name: str) -> list[str | bytes]:
        self._refuse_before_start(sent)
        if self.phase is CallPhase.ENDED:
            return []
        return [self._command(name)]

    def _command(self, name: str, **parameters: str) -> str:
        return command(self._control, name, **parameters)


def _variables(start: Control) -> dict[str, JsonValue]:
    """JSON MEDIA_START's ``channel_variables`` (the plain-text format has none)."""
    variables = start.fields.get("channel_variables", {})
    if not isinstance(variables, dict):
        raise start.error("channel_variables", f"must be an object, got {show(variables)}")
    return variables


def _digit(event: Control) -> str:
    digit = event.text("digit").upper()
    if digit not in DTMF_DIGITS:
        raise event.error("digit", f"must be one of 0-9 * # A-D, got {show(digit)}")
    return digit

"""Telnyx Media Streaming, bidirectional RTP mode, as a sans-I/O codec.

Wire protocol: shared/spec/providers.md §b.4, checked against Telnyx's AsyncAPI page
https://developers.telnyx.com/api-reference/websockets/stream-call-media-over-websocket .
Every message is a JSON text frame with an ``event`` key, in snake_case (``stream_id``,
``sequence_number``, ``media_format``). Audio is the base64 RTP payload (no RTP header) in the
call's codec; this codec reports G.711 μ-law and A-law, the codecs Telnyx transcodes between
(https://developers.telnyx.com/docs/voice/programmable-voice/texml-verbs/stream, ``codec``).
The parser ignores unknown keys and counts unknown events; it is strict about types, base64,
a foreign ``stream_id`` and events out of order.
"""

from __future__ import annotations

import base64
import json
from typing import assert_never

from voicegate.codecs.base import CallPhase, Capabilities, FrameLimits
from voicegate.codecs.commands import (
    AcceptCall,
    ClearAudio,
    Command,
    Hangup,
    PausePlayback,
    PlayAudio,
    PublishEvent,
    ResumePlayback,
    SetMark,
)
from voicegate.codecs.events import (
    AudioReceived,
    AudioTrack,
    CallEnded,
    CallStarted,
    DtmfReceived,
    Event,
    MarkReached,
)
from voicegate.codecs.wire import JsonObject, json_text_frame, show
from voicegate.errors import ConfigError, LocalProtocolError, RemoteProtocolError
from voicegate.types import TELEPHONE_ULAW, AudioEncoding, AudioFormat

#: Default for ``max_message_bytes``: a 20 ms media frame is about 350 bytes, a start with
#: custom parameters and tags a few kB.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024

#: ``media_format.encoding`` values this codec can hand to the media layer. Telnyx also
#: streams G722, OPUS and AMR-WB (Stream ``codec``); the TeXML voicegate serves asks for PCMU.
ENCODINGS = {"PCMU": AudioEncoding.PCMU, "PCMA": AudioEncoding.PCMA}
#: ``bidirectionalSamplingRate`` choices (TeXML Stream verb: 8000, 16000, 24000).
BIDIRECTIONAL_RATES = (8000, 16000, 24000)
#: "RTP media chunks sent back to Telnyx can contain 20 milliseconds to 30 seconds of audio"
#: (AsyncAPI page, Bidirectional Media).
MIN_CHUNK_MS = 20
MAX_CHUNK_MS = 30_000
#: G.711 silence, used to pad a short final chunk up to Telnyx's 20 ms minimum.
_SILENCE = {AudioEncoding.PCMU: b"\xff", AudioEncoding.PCMA: b"\xd5"}

# media.track: "inbound" / "outbound" on media frames; the *_track spellings are the
# stream_track values of Call Control and TeXML, accepted too (lenient, providers.md).
_TRACKS: dict[str, AudioTrack] = {
    "inbound": "inbound",
    "inbound_track": "inbound",
    "outbound": "outbound",
    "outbound_track": "outbound",
}


def telnyx_capabilities(outbound: AudioFormat) -> Capabilities:
    """What Telnyx Media Streaming can do when it plays ``outbound`` audio back."""
    return Capabilities(
        dialect="telnyx",
        flush_verb="clear",
        # No hang-up frame: closing the socket ends TeXML <Connect><Stream> and the next verb
        # runs, none in voicegate's answer (texml-verbs/connect: "The following instructions
        # will be executed when the service is stopped"). Call Control users hang up by REST.
        hangup_verb=None,
        # Mark Callback Frame: echoed when the preceding media has played, at once when
        # nothing is queued, and for every queued mark on `clear` (AsyncAPI page).
        playback_acks=True,
        pause=False,
        dtmf=True,
        binary_audio=False,
        inbound_formats=tuple(
            AudioFormat(encoding, rate)
            for encoding in ENCODINGS.values()
            for rate in BIDIRECTIONAL_RATES
        ),
        outbound_format=outbound,
        # Short chunks are padded with silence to 20 ms in send(); at most 30 s per frame.
        outbound_frames=FrameLimits(min_bytes=1, max_bytes=outbound.bytes_for_ms(MAX_CHUNK_MS)),
    )


class TelnyxCodec:
    """One Telnyx media stream: parses Telnyx's frames and writes its commands."""

    def __init__(
        self,
        *,
        outbound_format: AudioFormat = TELEPHONE_ULAW,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if max_message_bytes < 1:
            raise ConfigError(f"telnyx max_message_bytes must be positive, got {max_message_bytes}")
        check_outbound_format(outbound_format)
        self._capabilities = telnyx_capabilities(outbound_format)
        self._max_message_bytes = max_message_bytes
        self._phase = CallPhase.AWAITING_START
        self._stream_id: str | None = None
        self._inbound = TELEPHONE_ULAW  # replaced by start's media_format
        self._unknown_messages = 0

    @property
    def capabilities(self) -> Capabilities:
        """Telnyx's capabilities, with the bidirectional codec this gateway asked for."""
        return self._capabilities

    @property
    def unknown_messages(self) -> int:
        """How many messages with an unknown ``event`` were ignored."""
        return self._unknown_messages

    @property
    def phase(self) -> CallPhase:
        """Where the stream is: awaiting ``start``, started, or ended by ``stop``."""
        return self._phase

    @property
    def stream_id(self) -> str | None:
        """The ``stream_id`` from ``start``."""
        return self._stream_id

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message from Telnyx into events."""
        data = json_text_frame(message, self._max_message_bytes, "telnyx", "Telnyx Media Streaming")
        kind = JsonObject(data, "telnyx message").text("event")
        msg = JsonObject(data, f"telnyx {show(kind)} message")
        match kind:
            case "connected":
                return self._on_connected()
            case "start":
                return [self._on_start(msg)]
            case "error":  # fatal whenever it comes (before start too: e.g. a bad stream)
                raise RemoteProtocolError(f"telnyx sent an error: {_error_text(msg)}")
            case "media" | "dtmf" | "mark" | "stop":
                self._check_stream(kind, msg)
                return [self._on_stream_event(kind, msg)]
            case _:
                self._unknown_messages += 1  # a newer Telnyx frame: ignored, but counted
                return []

    def _on_stream_event(self, kind: str, msg: JsonObject) -> Event:
        match kind:
            case "media":
                return _parse_media(msg, self._inbound)
            case "dtmf":
                return DtmfReceived(msg.child("dtmf").dtmf_digit("digit"))
            case "mark":
                return MarkReached(msg.child("mark").text("name"))
            case _:  # "stop"
                self._phase = CallPhase.ENDED
                return CallEnded("telnyx sent stop")

    def _on_connected(self) -> list[Event]:
        # `connected` carries the protocol version, and the streaming auth token when one is
        # configured; the gateway checks that token on the upgrade's header (server route).
        if self._phase is CallPhase.ENDED:
            raise RemoteProtocolError("telnyx 'connected' message: arrived after 'stop'")
        return []

    def _on_start(self, msg: JsonObject) -> CallStarted:
        if self._phase is not CallPhase.AWAITING_START:
            state = "stopped" if self._phase is CallPhase.ENDED else "started"
            raise RemoteProtocolError(f"telnyx 'start' message: the stream is already {state}")
        stream_id = msg.text("stream_id")
        start = msg.child("start")
        started = CallStarted(
            stream_id=stream_id,
            call_id=start.text("call_control_id"),
            audio_format=_check_media_format(start.child("media_format")),
            # custom_parameters: TeXML <Parameter> / Call Control custom_parameters.
            metadata=start.json_mapping("custom_parameters"),
            account_id=start.optional_text("user_id"),
        )
        self._stream_id = stream_id
        self._inbound = started.audio_format
        self._phase = CallPhase.STARTED
        return started

    def _check_stream(self, kind: str, msg: JsonObject) -> None:
        """Stream events need an earlier `start`, no `stop` yet, and no foreign stream_id."""
        if self._phase is not CallPhase.STARTED:
            where = "before 'start'" if self._stream_id is None else "after 'stop'"
            raise RemoteProtocolError(f"telnyx {show(kind)} message: arrived {where}")
        # Telnyx puts stream_id on every frame; clones may drop it, so only a mismatch fails.
        stream_id = msg.optional_text("stream_id")
        if stream_id is not None and stream_id != self._stream_id:
            raise msg.error(
                "stream_id", f"{show(stream_id)} is not this stream's {show(self._stream_id)}"
            )

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """Write one command as Telnyx frames (`media`, `mark`, `clear`)."""
        match command:
            case Hangup():
                return []  # the session closes the socket; see telnyx_capabilities
            case PublishEvent():
                return []  # Telnyx has no frame for it (informational only)
            case PausePlayback() | ResumePlayback():
                raise LocalProtocolError("telnyx: Media Streaming has no pause (capabilities)")
            case AcceptCall():
                self._refuse_before_start(command)
                return []  # Telnyx expects no reply to `start`
            case PlayAudio(payload=payload):
                encoded = base64.b64encode(self._padded(payload)).decode("ascii")
                return self._message(command, {"event": "media", "media": {"payload": encoded}})
            case SetMark(name=name):
                if not name:
                    raise LocalProtocolError("telnyx: SetMark needs a non-empty name")
                return self._message(command, {"event": "mark", "mark": {"name": name}})
            case ClearAudio():
                return self._message(command, {"event": "clear"})
            case _:
                assert_never(command)

    def _padded(self, payload: bytes) -> bytes:
        """``payload``, checked, and padded with silence to Telnyx's 20 ms minimum chunk."""
        outbound = self._capabilities.outbound_format
        problem = self._capabilities.outbound_frames.violation(len(payload))
        if problem:
            raise LocalProtocolError(f"telnyx: PlayAudio payload of {problem}")
        short = outbound.bytes_for_ms(MIN_CHUNK_MS) - len(payload)
        return payload + _SILENCE[outbound.encoding] * short if short > 0 else payload

    def _message(self, command: Command, message: dict[str, object]) -> list[str | bytes]:
        """One compact JSON frame; nothing once the stream has stopped."""
        self._refuse_before_start(command)
        if self._phase is CallPhase.ENDED:
            return []  # the call is over: there is no one left to hear it
        return [json.dumps(message, separators=(",", ":"))]

    def _refuse_before_start(self, command: Command) -> None:
        if self._phase is CallPhase.AWAITING_START:
            name = type(command).__name__
            raise LocalProtocolError(f"telnyx: {name} before 'start' (no stream yet)")


def check_outbound_format(audio_format: AudioFormat) -> None:
    """Refuse a bidirectional format this codec cannot send (G.711 at a Telnyx rate, mono)."""
    if audio_format.encoding not in _SILENCE or audio_format.channels != 1:
        raise ConfigError(f"telnyx bidirectional codec must be PCMU or PCMA mono: {audio_format}")
    if audio_format.sample_rate not in BIDIRECTIONAL_RATES:
        raise ConfigError(
            f"telnyx bidirectional sampling rate must be one of {BIDIRECTIONAL_RATES}, "
            f"got {audio_format.sample_rate}"
        )


def _check_media_format(media_format: JsonObject) -> AudioFormat:
    """PCMU or PCMA, mono, at a positive rate; anything else would be decoded as noise."""
    encoding = media_format.text("encoding")
    rate = media_format.integer("sample_rate")
    channels = media_format.optional_integer("channels")
    if encoding not in ENCODINGS:
        raise media_format.error(
            "encoding", f"must be 'PCMU' or 'PCMA' (set the stream codec), got {show(encoding)}"
        )
    if rate not in BIDIRECTIONAL_RATES:
        raise media_format.error("sample_rate", f"must be one of {BIDIRECTIONAL_RATES}, got {rate}")
    if channels not in (None, 1):
        raise media_format.error("channels", f"must be 1, got {channels}")
    return AudioFormat(ENCODINGS[encoding], rate)


def _parse_media(msg: JsonObject, audio_format: AudioFormat) -> AudioReceived:
    """A `media` frame: base64 RTP payload, chunk and timestamp (strings on the wire).

    Telnyx does not guarantee order (AsyncAPI page, Ordering); ``chunk`` is reported so a
    consumer can reorder.
    """
    media = msg.child("media")
    payload = media.base64("payload")
    track_name = media.optional_text("track") or "inbound"
    track = _TRACKS.get(track_name)
    if track is None:
        raise media.error("track", f"must be 'inbound' or 'outbound', got {show(track_name)}")
    return AudioReceived(
        payload=payload,
        audio_format=audio_format,
        timestamp_ms=media.optional_counter("timestamp"),
        chunk=media.optional_counter("chunk"),
        track=track,
    )


def _error_text(msg: JsonObject) -> str:
    """The Error Frame's ``payload`` (code, title, detail), shown leniently."""
    payload = msg.json_mapping("payload")
    parts = [str(payload[key]) for key in ("code", "title", "detail") if payload.get(key)]
    return " ".join(parts) if parts else "no detail given"

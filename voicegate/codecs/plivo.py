"""Plivo Audio Streams, bidirectional, as a sans-I/O codec.

Wire protocol: shared/spec/providers.md §b.5, checked against Plivo's Stream Event Protocol
page https://plivo.com/docs/voice/audio-streaming/audio-streaming and the XML reference
https://docs.plivo.com/docs/voice/xml/audiostream . Every message is a JSON text frame with
an ``event`` key, in camelCase (``streamId``, ``sequenceNumber``, ``mediaFormat``). Audio is
base64 μ-law at 8 kHz or 16-bit linear PCM at 8 or 16 kHz, as the ``<Stream contentType>``
chose. Plivo sends no ``stop`` frame: the stream ends when the socket closes (lifecycle goes
to the ``statusCallbackUrl``). The parser ignores unknown keys and counts unknown events; it
is strict about types, base64, a foreign ``streamId`` and events out of order.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
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
    JsonValue,
    MarkReached,
)
from voicegate.codecs.wire import JsonObject, json_text_frame, show
from voicegate.errors import ConfigError, LocalProtocolError, RemoteProtocolError
from voicegate.types import TELEPHONE_ULAW, AudioEncoding, AudioFormat

#: Default for ``max_message_bytes``: a 20 ms media frame of L16 at 16 kHz is under 1 kB.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024

#: What ``<Stream contentType>`` and ``playAudio`` allow (XML reference, contentType;
#: playAudio page: "audio/x-l16: 8000, 16000, audio/x-mulaw: 8000").
FORMATS = {
    ("audio/x-mulaw", 8000): TELEPHONE_ULAW,
    ("audio/x-l16", 8000): AudioFormat(AudioEncoding.L16, 8000),
    ("audio/x-l16", 16000): AudioFormat(AudioEncoding.L16, 16000),
}
_CONTENT_TYPES = {audio_format: name for (name, _), audio_format in FORMATS.items()}
_TRACKS: dict[str, AudioTrack] = {"inbound": "inbound", "outbound": "outbound"}
# extra_headers: "k=v" pairs; the XML attribute uses commas, the start example semicolons.
_HEADER_SEPARATORS = re.compile("[;,]")


def plivo_capabilities(outbound: AudioFormat) -> Capabilities:
    """What Plivo Audio Streams can do when the gateway plays ``outbound`` audio."""
    return Capabilities(
        dialect="plivo",
        flush_verb="clearAudio",  # answered by clearedAudio
        # No hang-up frame: closing the socket ends <Stream keepCallAlive="true">, and with no
        # element after it the call ends (XML reference, keepCallAlive).
        hangup_verb=None,
        # checkpoint -> playedStream "only ... if the preceding events were played
        # successfully" (checkpoint-event page): a clear discards pending checkpoints.
        playback_acks=True,
        pause=False,
        dtmf=True,
        binary_audio=False,
        inbound_formats=tuple(FORMATS.values()),
        outbound_format=outbound,
        # Plivo documents no size limits; L16 needs whole samples.
        outbound_frames=FrameLimits(min_bytes=1, multiple_of=outbound.bytes_per_sample),
    )


def plivo_format(content_type: str) -> AudioFormat:
    """The format a ``<Stream contentType>`` value such as ``audio/x-mulaw;rate=8000`` names."""
    name, _, rate = content_type.partition(";rate=")
    audio_format = FORMATS.get((name, int(rate))) if rate.isdigit() else None
    if audio_format is None:
        choices = ", ".join(f"{n};rate={r}" for n, r in FORMATS)
        raise ConfigError(f"plivo content_type must be one of {choices}, got {content_type!r}")
    return audio_format


def content_type(audio_format: AudioFormat) -> str:
    """The ``<Stream contentType>`` value of a format (the inverse of :func:`plivo_format`)."""
    return f"{_CONTENT_TYPES[audio_format]};rate={audio_format.sample_rate}"


class PlivoCodec:
    """One Plivo audio stream: parses Plivo's events and writes its commands."""

    def __init__(
        self,
        *,
        outbound_format: AudioFormat = TELEPHONE_ULAW,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if max_message_bytes < 1:
            raise ConfigError(f"plivo max_message_bytes must be positive, got {max_message_bytes}")
        if outbound_format not in _CONTENT_TYPES:
            raise ConfigError(f"plivo cannot play {outbound_format} (see plivo_format)")
        self._capabilities = plivo_capabilities(outbound_format)
        self._max_message_bytes = max_message_bytes
        self._phase = CallPhase.AWAITING_START
        self._stream_id: str | None = None
        self._inbound = TELEPHONE_ULAW  # replaced by start's mediaFormat
        self._unknown_messages = 0

    @property
    def capabilities(self) -> Capabilities:
        """Plivo's capabilities, with the playback format this gateway chose."""
        return self._capabilities

    @property
    def unknown_messages(self) -> int:
        """How many messages with an unknown ``event`` were ignored."""
        return self._unknown_messages

    @property
    def phase(self) -> CallPhase:
        """Where the stream is: awaiting ``start``, started, or ended."""
        return self._phase

    @property
    def stream_id(self) -> str | None:
        """The ``streamId`` from ``start``, which checkpoint and clearAudio must carry."""
        return self._stream_id

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message from Plivo into events."""
        data = json_text_frame(message, self._max_message_bytes, "plivo", "Plivo Audio Streams")
        kind = JsonObject(data, "plivo message").text("event")
        msg = JsonObject(data, f"plivo {show(kind)} message")
        match kind:
            case "start":
                return [self._on_start(msg)]
            # "played" is the spelling of Plivo's support FAQ for the same acknowledgement;
            # "stop" is sent by Plivo-compatible clones only [ex]. Both accepted (lenient).
            case "media" | "dtmf" | "playedStream" | "played" | "clearedAudio" | "stop":
                self._check_stream(kind, msg)
                return self._on_stream_event(kind, msg)
            case _:
                self._unknown_messages += 1  # a newer Plivo event: ignored, but counted
                return []

    def _on_stream_event(self, kind: str, msg: JsonObject) -> list[Event]:
        match kind:
            case "media":
                return [_parse_media(msg, self._inbound)]
            case "dtmf":
                return [DtmfReceived(msg.child("dtmf").dtmf_digit("digit"))]
            case "playedStream" | "played":
                return [MarkReached(msg.text("name"))]
            case "clearedAudio":
                return []  # the flush was done; the ledger settled it when clearAudio went out
            case _:  # "stop"
                self._phase = CallPhase.ENDED
                return [CallEnded("plivo sent stop")]

    def _on_start(self, msg: JsonObject) -> CallStarted:
        if self._phase is not CallPhase.AWAITING_START:
            state = "stopped" if self._phase is CallPhase.ENDED else "started"
            raise RemoteProtocolError(f"plivo 'start' message: the stream is already {state}")
        start = msg.child("start")
        stream_id = start.text("streamId")
        started = CallStarted(
            stream_id=stream_id,
            call_id=start.text("callId"),
            audio_format=_check_media_format(start.child("mediaFormat")),
            metadata=_extra_headers(msg),
            account_id=start.optional_text("accountId"),
        )
        self._stream_id = stream_id
        self._inbound = started.audio_format
        self._phase = CallPhase.STARTED
        return started

    def _check_stream(self, kind: str, msg: JsonObject) -> None:
        """Stream events need an earlier `start`, no stop yet, and no foreign streamId."""
        if self._phase is not CallPhase.STARTED:
            where = "before 'start'" if self._stream_id is None else "after 'stop'"
            raise RemoteProtocolError(f"plivo {show(kind)} message: arrived {where}")
        # Clones drop streamId from playedStream [ex]; only a mismatch fails.
        stream_id = msg.optional_text("streamId")
        if stream_id is not None and stream_id != self._stream_id:
            raise msg.error(
                "streamId", f"{show(stream_id)} is not this stream's {show(self._stream_id)}"
            )

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """Write one command as Plivo events (`playAudio`, `checkpoint`, `clearAudio`)."""
        match command:
            case Hangup():
                return []  # the session closes the socket; see plivo_capabilities
            case PublishEvent():
                return []  # Plivo has no event for it (informational only)
            case PausePlayback() | ResumePlayback():
                raise LocalProtocolError("plivo: Audio Streams has no pause (capabilities)")
            case AcceptCall():
                self._refuse_before_start(command)
                return []  # Plivo expects no reply to `start`
            case PlayAudio(payload=payload):
                return self._message(command, {"event": "playAudio", "media": self._media(payload)})
            case SetMark(name=name):
                if not name:
                    raise LocalProtocolError("plivo: SetMark needs a non-empty name")
                body = {"event": "checkpoint", "streamId": self._stream_id, "name": name}
                return self._message(command, body)
            case ClearAudio():
                return self._message(command, {"event": "clearAudio", "streamId": self._stream_id})
            case _:
                assert_never(command)

    def _media(self, payload: bytes) -> dict[str, object]:
        """playAudio's ``media``: content type, rate (an integer) and the base64 payload."""
        problem = self._capabilities.outbound_frames.violation(len(payload))
        if problem:
            raise LocalProtocolError(f"plivo: PlayAudio payload of {problem}")
        outbound = self._capabilities.outbound_format
        return {
            "contentType": _CONTENT_TYPES[outbound],
            "sampleRate": outbound.sample_rate,
            "payload": base64.b64encode(payload).decode("ascii"),
        }

    def _message(self, command: Command, message: Mapping[str, object]) -> list[str | bytes]:
        """One compact JSON frame; nothing once the stream has ended."""
        self._refuse_before_start(command)
        if self._phase is CallPhase.ENDED:
            return []
        return [json.dumps(message, separators=(",", ":"))]

    def _refuse_before_start(self, command: Command) -> None:
        if self._phase is CallPhase.AWAITING_START:
            name = type(command).__name__
            raise LocalProtocolError(f"plivo: {name} before 'start' (no streamId yet)")


def _check_media_format(media_format: JsonObject) -> AudioFormat:
    """μ-law at 8 kHz or L16 at 8/16 kHz; anything else would be decoded as noise."""
    encoding = media_format.text("encoding")
    rate = media_format.integer("sampleRate")
    audio_format = FORMATS.get((encoding, rate))
    if audio_format is None:
        choices = ", ".join(f"{name} at {hz}" for name, hz in FORMATS)
        raise media_format.error(
            "encoding", f"and sampleRate must be one of {choices}, got {show(encoding)} at {rate}"
        )
    return audio_format


def _extra_headers(msg: JsonObject) -> dict[str, JsonValue]:
    """``extra_headers`` ("k=v;k2=v2") as metadata; a part without ``=`` is kept as a flag."""
    text = msg.optional_text("extra_headers") or ""
    pairs = (part.partition("=") for part in _HEADER_SEPARATORS.split(text) if part.strip())
    headers: dict[str, JsonValue] = {name.strip(): value.strip() for name, _, value in pairs}
    return headers


def _parse_media(msg: JsonObject, audio_format: AudioFormat) -> AudioReceived:
    """A `media` event: base64 audio, Plivo's chunk counter and the track.

    ``media.timestamp`` is a Unix time in ms (wall clock, not media time), so it is checked
    but not reported; the session counts samples instead (design §6).
    """
    media = msg.child("media")
    payload = media.base64("payload")
    if len(payload) % audio_format.bytes_per_sample:
        raise media.error("payload", f"holds {len(payload)} bytes, not whole 16-bit samples")
    track_name = media.optional_text("track") or "inbound"
    track = _TRACKS.get(track_name)
    if track is None:
        raise media.error("track", f"must be 'inbound' or 'outbound', got {show(track_name)}")
    media.optional_counter("timestamp")
    return AudioReceived(
        payload=payload,
        audio_format=audio_format,
        chunk=media.optional_counter("chunk"),
        track=track,
    )

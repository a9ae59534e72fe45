"""Twilio Media Streams, bidirectional (``<Connect><Stream>``), as a sans-I/O codec.

Wire protocol: shared/spec/providers.md §b.1, restating
https://www.twilio.com/docs/voice/media-streams/websocket-messages . Every message is a JSON
text frame with an ``event`` key; audio is base64 μ-law at 8 kHz in both directions. The
parser ignores unknown keys and counts unknown events, and is strict where wrong data would
mislead: types, base64, a missing or foreign ``streamSid``, and events out of order.
"""

from __future__ import annotations

import binascii
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
from voicegate.types import TELEPHONE_ULAW, AudioFormat

#: Default for ``max_message_bytes``: a 20 ms media message is about 350 bytes, a start with
#: custom parameters a few kB; anything near this limit is not Twilio.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024

#: What Twilio Media Streams can do (providers.md §b.0, first row).
TWILIO_CAPABILITIES = Capabilities(
    dialect="twilio",
    flush_verb="clear",
    # No hang-up message: closing the socket ends <Connect><Stream> and Twilio runs the next
    # TwiML verb, if any (https://www.twilio.com/docs/voice/twiml/stream).
    hangup_verb=None,
    playback_acks=True,  # `mark` echoed when played, and also when `clear` discards it
    pause=False,
    dtmf=True,
    binary_audio=False,
    inbound_formats=(TELEPHONE_ULAW,),
    outbound_format=TELEPHONE_ULAW,
    # Twilio documents no size limit for outbound media; any whole number of μ-law bytes.
    outbound_frames=FrameLimits(min_bytes=1),
)

# media.track spellings: `inbound`/`outbound` on media, `inbound_track` on dtmf and in TwiML.
_TRACKS: dict[str, AudioTrack] = {
    "inbound": "inbound",
    "inbound_track": "inbound",
    "outbound": "outbound",
    "outbound_track": "outbound",
}
_MEDIA_FORMAT = {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}


class TwilioCodec:
    """One Twilio Media Streams call: parses Twilio's events and writes its commands."""

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        if max_message_bytes < 1:
            raise ConfigError(f"twilio max_message_bytes must be positive, got {max_message_bytes}")
        self._max_message_bytes = max_message_bytes
        self._phase = CallPhase.AWAITING_START
        self._stream_sid: str | None = None
        self._media_prefix = ""  # the start of every outbound `media` message, set at start
        self._unknown_messages = 0

    @property
    def capabilities(self) -> Capabilities:
        """Twilio's capabilities (the same for every call)."""
        return TWILIO_CAPABILITIES

    @property
    def unknown_messages(self) -> int:
        """How many messages with an unknown ``event`` were ignored."""
        return self._unknown_messages

    @property
    def phase(self) -> CallPhase:
        """Where the stream is: awaiting ``start``, started, or ended by ``stop``."""
        return self._phase

    @property
    def stream_sid(self) -> str | None:
        """The ``streamSid`` from ``start``, which every later message must carry."""
        return self._stream_sid

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message from Twilio into events."""
        data = json_text_frame(message, self._max_message_bytes, "twilio", "Twilio Media Streams")
        media = self._plain_media(data)
        if media is not None:
            return [media]
        kind = JsonObject(data, "twilio message").text("event")
        msg = JsonObject(data, f"twilio {show(kind)} message")
        match kind:
            case "connected":
                return self._on_connected()
            case "start":
                return [self._on_start(msg)]
            case "media" | "dtmf" | "mark" | "stop":
                self._check_stream(kind, msg)
                return [self._on_stream_event(kind, msg)]
            case _:
                # An event this codec does not know (a newer Twilio feature): ignore, but count.
                self._unknown_messages += 1
                return []

    def _plain_media(self, data: dict[str, object]) -> AudioReceived | None:
        """A well-formed inbound ``media`` message of this stream, read without the checked
        field reader (50 a second per call: ~3x cheaper, bench/media_cost.py); None for
        anything else, which the strict path below then accepts or rejects with a reason."""
        media = data.get("media")
        if (
            data.get("event") != "media"
            or self._phase is not CallPhase.STARTED
            or data.get("streamSid") != self._stream_sid
            or type(media) is not dict
            or media.get("track", "inbound") != "inbound"
        ):
            return None
        payload, chunk, stamp = media.get("payload"), media.get("chunk"), media.get("timestamp")
        if type(payload) is not str or not (_plain_counter(chunk) and _plain_counter(stamp)):
            return None
        try:
            audio = binascii.a2b_base64(payload, strict_mode=True)  # b64decode(validate=True)
        except (binascii.Error, ValueError):
            return None
        return AudioReceived(
            audio,
            TELEPHONE_ULAW,
            None if stamp is None else int(stamp),
            None if chunk is None else int(chunk),
        )

    def _on_stream_event(self, kind: str, msg: JsonObject) -> Event:
        match kind:
            case "media":
                return _parse_media(msg)
            case "dtmf":
                return DtmfReceived(msg.child("dtmf").dtmf_digit("digit"))
            case "mark":
                return MarkReached(msg.child("mark").text("name"))
            case _:  # "stop"; its accountSid/callSid repeat what start said
                self._phase = CallPhase.ENDED
                return CallEnded("twilio sent stop")

    def _on_connected(self) -> list[Event]:
        # `connected` only announces protocol "Call" / version "1.0.0"; nothing to report.
        if self._phase is CallPhase.ENDED:
            raise RemoteProtocolError("twilio 'connected' message: arrived after 'stop'")
        return []

    def _on_start(self, msg: JsonObject) -> CallStarted:
        if self._phase is not CallPhase.AWAITING_START:
            state = "stopped" if self._phase is CallPhase.ENDED else "started"
            raise RemoteProtocolError(f"twilio 'start' message: the stream is already {state}")
        start = msg.child("start")
        stream_sid = _start_stream_sid(msg, start)
        started = CallStarted(
            stream_id=stream_sid,
            call_id=start.text("callSid"),
            audio_format=_check_media_format(start.child("mediaFormat")),
            metadata=start.string_mapping("customParameters"),
            account_id=start.optional_text("accountSid"),
        )
        self._stream_sid = stream_sid
        sid = json.dumps(stream_sid)
        self._media_prefix = f'{{"event":"media","streamSid":{sid},"media":'
        self._phase = CallPhase.STARTED
        return started

    def _check_stream(self, kind: str, msg: JsonObject) -> None:
        """Stream events need an earlier `start`, no `stop` yet, and this stream's SID."""
        if self._phase is not CallPhase.STARTED:
            where = "before 'start'" if self._stream_sid is None else "after 'stop'"
            raise RemoteProtocolError(f"twilio {show(kind)} message: arrived {where}")
        stream_sid = msg.text("streamSid")
        if stream_sid != self._stream_sid:
            raise msg.error(
                "streamSid", f"{show(stream_sid)} is not this stream's {show(self._stream_sid)}"
            )

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """Write one command as Twilio messages (`media`, `mark`, `clear`)."""
        match command:
            case Hangup():
                return []  # the session closes the socket; see TWILIO_CAPABILITIES
            case PublishEvent():
                return []  # Media Streams has no message for it (informational only)
            case PausePlayback() | ResumePlayback():
                raise LocalProtocolError("twilio: Media Streams has no pause (capabilities.pause)")
            case AcceptCall():
                self._refuse_before_start(command)
                return []  # Twilio expects no reply to `start`
            case PlayAudio(payload=payload):
                problem = TWILIO_CAPABILITIES.outbound_frames.violation(len(payload))
                if problem:
                    raise LocalProtocolError(f"twilio: PlayAudio payload of {problem}")
                return self._media_message(command, payload)
            case SetMark(name=name):
                if not name:
                    raise LocalProtocolError("twilio: SetMark needs a non-empty name")
                return self._stream_message(command, "mark", {"name": name})
            case ClearAudio():
                return self._stream_message(command, "clear", None)
            case _:
                assert_never(command)

    def _media_message(self, command: Command, payload: bytes) -> list[str | bytes]:
        """``media`` written by hand: what ``_stream_message`` gives, without ``json.dumps``
        (base64 never needs escaping; the SID is escaped once, at start)."""
        self._refuse_before_start(command)
        if self._phase is CallPhase.ENDED:
            return []
        encoded = binascii.b2a_base64(payload, newline=False).decode("ascii")
        return [f'{self._media_prefix}{{"payload":"{encoded}"}}}}']

    def _stream_message(
        self, command: Command, event: str, body: dict[str, str] | None
    ) -> list[str | bytes]:
        """``{"event", "streamSid", <event>: body}``; nothing once the stream has stopped."""
        self._refuse_before_start(command)
        if self._phase is CallPhase.ENDED:
            return []  # the call is over: there is no one left to hear it
        message: dict[str, object] = {"event": event, "streamSid": self._stream_sid}
        if body is not None:
            message[event] = body
        return [json.dumps(message, separators=(",", ":"))]

    def _refuse_before_start(self, command: Command) -> None:
        if self._phase is CallPhase.AWAITING_START:
            name = type(command).__name__
            raise LocalProtocolError(f"twilio: {name} before 'start' (no streamSid yet)")


def _start_stream_sid(msg: JsonObject, start: JsonObject) -> str:
    """The SID from ``start.streamSid`` or the top level; both must agree when both exist."""
    inner = start.optional_text("streamSid")
    outer = msg.optional_text("streamSid")
    if inner is None and outer is None:
        raise start.error("streamSid", "is missing (and there is no top-level streamSid)")
    if inner is not None and outer is not None and inner != outer:
        raise msg.error("streamSid", f"{show(outer)} differs from start.streamSid {show(inner)}")
    return inner if inner is not None else str(outer)


def _plain_counter(value: object) -> bool:
    """Absent, or Twilio's digit string that ``JsonObject.optional_counter`` accepts as is."""
    if value is None:
        return True
    return type(value) is str and value.isascii() and value.isdigit() and len(value) <= 18


def _check_media_format(media_format: JsonObject) -> AudioFormat:
    """Twilio streams only μ-law 8 kHz mono; anything else would be decoded as noise."""
    found = {
        "encoding": media_format.text("encoding"),
        "sampleRate": media_format.integer("sampleRate"),
        "channels": media_format.integer("channels"),
    }
    for key, expected in _MEDIA_FORMAT.items():
        if found[key] != expected:
            raise media_format.error(key, f"must be {expected!r}, got {found[key]!r}")
    return TELEPHONE_ULAW


def _parse_media(msg: JsonObject) -> AudioReceived:
    """A `media` event: base64 μ-law plus Twilio's chunk counter and timestamp (strings)."""
    media = msg.child("media")
    payload = media.base64("payload")
    track_name = media.optional_text("track") or "inbound"
    track = _TRACKS.get(track_name)
    if track is None:
        raise media.error("track", f"must be 'inbound' or 'outbound', got {show(track_name)}")
    return AudioReceived(
        payload=payload,
        audio_format=TELEPHONE_ULAW,
        timestamp_ms=media.optional_counter("timestamp"),
        chunk=media.optional_counter("chunk"),
        track=track,
    )

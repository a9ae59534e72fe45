"""Exotel AgentStream, the Voicebot applet's bidirectional stream, as a sans-I/O codec.

Wire protocol: shared/spec/providers.md §b.6, checked against Exotel's WebSocket protocol page
https://developer.exotel.com/docs/agentstream/websocket-protocol and the applet page
https://developer.exotel.com/docs/agentstream/stream-voicebot-applet . Every message is a JSON
text frame with an ``event`` key, in snake_case (``stream_sid``, ``sequence_number``,
``media_format``; Twilio's shape with other spelling). Audio is base64 raw/slin: 16-bit signed
little-endian PCM, mono, at 8 kHz unless the URL asks for 16 or 24 kHz (``?sample-rate=``),
both ways. The Voicebot applet sends ``connected``, ``start``, ``media`` (about every 100 ms),
``dtmf``, ``mark`` (once the audio sent before it has played) and ``stop``; the gateway sends
``media``, ``mark`` and ``clear``. The parser ignores unknown keys and counts unknown events;
it is strict about types, base64, a foreign ``stream_sid`` and events out of order.
"""

from __future__ import annotations

import base64

from voicegate.codecs.base import Capabilities, FrameLimits
from voicegate.codecs.commands import ClearAudio, Command, PlayAudio, SetMark
from voicegate.codecs.events import (
    AudioReceived,
    CallEnded,
    CallStarted,
    DtmfReceived,
    Event,
    JsonValue,
    MarkReached,
)
from voicegate.codecs.stream import StreamCodec
from voicegate.codecs.wire import JsonObject, json_text_frame, show
from voicegate.errors import ConfigError, LocalProtocolError
from voicegate.types import AudioEncoding, AudioFormat

#: Default for ``max_message_bytes``: 100 ms at 24 kHz is 4.8 kB of PCM, 6.4 kB in base64.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
#: The applet's sample rates (applet page, Sample Rate: 8000 default, 16000, 24000).
SAMPLE_RATES = (8000, 16000, 24000)
#: Outbound chunk rules (applet page, Chunk Size Requirements): at least 3.2 kB, at most
#: 100 kB, a whole number of 320-byte blocks; smaller chunks distort, odd sizes leave gaps.
MIN_CHUNK_BYTES = 3200
MAX_CHUNK_BYTES = 100_000
CHUNK_MULTIPLE = 320
#: ``media_format.encoding`` spellings: the protocol page's example says ``audio/x-raw``;
#: providers.md §b.6 and the applet page say raw/slin (lenient, providers.md).
ENCODINGS = frozenset({"audio/x-raw", "raw", "slin", "raw/slin"})
_BIT_DEPTH = 16


def exotel_format(sample_rate: int) -> AudioFormat:
    """The stream's audio (both ways) at one of the applet's rates."""
    if sample_rate not in SAMPLE_RATES:
        raise ConfigError(f"exotel sample_rate must be one of {SAMPLE_RATES}, got {sample_rate}")
    return AudioFormat(AudioEncoding.L16, sample_rate)


def exotel_capabilities(audio_format: AudioFormat) -> Capabilities:
    """What the Voicebot applet's stream can do, carrying ``audio_format`` both ways."""
    return Capabilities(
        dialect="exotel",
        flush_verb="clear",
        # No hang-up message: closing the socket ends the Voicebot applet and the flow goes on
        # to the next applet (applet page, Next Applet), a Hangup applet in docs/protocols.
        hangup_verb=None,
        # mark: "Sent when audio you previously sent has finished playing" (protocol page).
        playback_acks=True,
        pause=False,
        dtmf=True,
        binary_audio=False,
        inbound_formats=tuple(exotel_format(rate) for rate in SAMPLE_RATES),
        outbound_format=audio_format,
        # What Exotel takes per media message; send() pads a shorter tail with silence, and
        # the session sends chunks of at least min_bytes (session.py, playout pace).
        outbound_frames=FrameLimits(
            min_bytes=MIN_CHUNK_BYTES, max_bytes=MAX_CHUNK_BYTES, multiple_of=CHUNK_MULTIPLE
        ),
    )


class ExotelCodec(StreamCodec):
    """One Voicebot applet stream: parses Exotel's events and writes its commands."""

    def __init__(
        self, *, sample_rate: int = 8000, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    ) -> None:
        # The URL's ?sample-rate= chose the rate; start's media_format confirms it.
        super().__init__(
            exotel_capabilities(exotel_format(sample_rate)), max_message_bytes=max_message_bytes
        )
        self._stream_sid: str | None = None

    @property
    def stream_id(self) -> str | None:
        """The ``stream_sid`` from ``start``, which every gateway message carries."""
        return self._stream_sid

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message from Exotel into events."""
        data = json_text_frame(message, self._max_message_bytes, "exotel", "Exotel AgentStream")
        kind = JsonObject(data, "exotel message").text("event")
        msg = JsonObject(data, f"exotel {show(kind)} message")
        match kind:
            case "connected":
                return []  # carries nothing; start follows
            case "start":
                return [self._on_start(msg)]
            case "media" | "dtmf" | "mark" | "stop":
                self._check_stream(kind, msg)
                return [self._on_stream_event(kind, msg)]
            case _:
                return self._ignored()

    def _on_stream_event(self, kind: str, msg: JsonObject) -> Event:
        match kind:
            case "media":
                return self._parse_media(msg.child("media"))
            case "dtmf":
                return DtmfReceived(msg.child("dtmf").dtmf_digit("digit"))
            case "mark":
                return MarkReached(msg.child("mark").text("name"))
            case _:  # "stop": read it whole before ending, so a refused one changes nothing
                stop = msg.optional_child("stop")
                reason = stop.optional_text("reason") if stop is not None else None
                self._end()
                return CallEnded(f"exotel sent stop ({reason})" if reason else "exotel sent stop")

    def _on_start(self, msg: JsonObject) -> CallStarted:
        self._check_startable("start")
        start = msg.child("start")
        stream_sid = msg.optional_text("stream_sid") or start.text("stream_sid")
        media_format = start.optional_child("media_format")
        audio_format = self._capabilities.outbound_format
        if media_format is not None:
            audio_format = _check_media_format(media_format)
        started = CallStarted(
            stream_id=stream_sid,
            call_id=start.text("call_sid"),
            audio_format=audio_format,
            metadata=_metadata(start),
            account_id=start.optional_text("account_sid"),
        )
        self._stream_sid = stream_sid
        self._capabilities = exotel_capabilities(audio_format)
        self._started()
        return started

    def _check_stream(self, kind: str, msg: JsonObject) -> None:
        """Stream events need an earlier start, no stop yet, and no foreign stream_sid."""
        self._require_started(kind)
        stream_sid = msg.optional_text("stream_sid")
        if stream_sid is not None and stream_sid != self._stream_sid:
            raise msg.error(
                "stream_sid", f"{show(stream_sid)} is not this stream's {show(self._stream_sid)}"
            )

    def _parse_media(self, media: JsonObject) -> AudioReceived:
        """A media event: base64 PCM; ``timestamp`` is ms since the stream began (a string)."""
        payload = media.base64("payload")
        if len(payload) % 2:
            raise media.error("payload", f"holds {len(payload)} bytes, not whole 16-bit samples")
        return AudioReceived(
            payload=payload,
            audio_format=self._capabilities.outbound_format,
            timestamp_ms=media.optional_counter("timestamp"),
            chunk=media.optional_counter("chunk"),
        )

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """Write one command as Exotel events (``media``, ``mark``, ``clear``)."""
        match command:
            case PlayAudio(payload=payload):
                media = {"payload": base64.b64encode(self._padded(payload)).decode("ascii")}
                return self._event(command, "media", media=media)
            case SetMark(name=name):
                if not name:
                    raise LocalProtocolError("exotel: SetMark needs a non-empty name")
                return self._event(command, "mark", mark={"name": name})
            case ClearAudio():
                return self._event(command, "clear")
            case _:
                return self._common(command)

    def _event(self, command: Command, event: str, **body: object) -> list[str | bytes]:
        """A gateway event; every one names the stream (protocol page, "your server → Exotel")."""
        return self._json(command, {"event": event, "stream_sid": self._stream_sid, **body})

    def _padded(self, payload: bytes) -> bytes:
        """``payload`` padded with silence to whole 320-byte blocks and at least 3.2 kB."""
        if not payload or len(payload) % 2:
            raise LocalProtocolError(
                f"exotel: PlayAudio payload of {len(payload)} bytes is not whole 16-bit samples"
            )
        if len(payload) > MAX_CHUNK_BYTES:
            raise LocalProtocolError(
                f"exotel: PlayAudio payload of {len(payload)} bytes is above {MAX_CHUNK_BYTES}"
            )
        blocks = -(-len(payload) // CHUNK_MULTIPLE) * CHUNK_MULTIPLE
        return payload + bytes(max(blocks, MIN_CHUNK_BYTES) - len(payload))


def _check_media_format(media_format: JsonObject) -> AudioFormat:
    """16-bit raw PCM at an applet rate; ``sample_rate`` and ``bit_rate`` come as strings."""
    encoding = media_format.optional_text("encoding")
    if encoding is not None and encoding.lower() not in ENCODINGS:
        raise media_format.error(
            "encoding", f"must be audio/x-raw (raw/slin), got {show(encoding)}"
        )
    rate = media_format.optional_counter("sample_rate")
    if rate not in SAMPLE_RATES:
        raise media_format.error("sample_rate", f"must be one of {SAMPLE_RATES}, got {rate}")
    bits = media_format.optional_counter("bit_rate")
    if bits not in (None, _BIT_DEPTH):
        raise media_format.error("bit_rate", f"must be 16, got {bits}")
    return exotel_format(rate)


def _metadata(start: JsonObject) -> dict[str, JsonValue]:
    """The URL's custom parameters, with the call's ``from`` and ``to`` when Exotel gives them."""
    metadata: dict[str, JsonValue] = {}
    for key in ("from", "to"):
        value = start.optional_text(key)
        if value is not None:
            metadata[key] = value
    metadata.update(start.json_mapping("custom_parameters"))
    return metadata

"""Vonage Voice API WebSockets (NCCO ``connect`` to a ``websocket`` endpoint), sans-I/O.

Wire protocol: shared/spec/providers.md §b.3, checked against
https://developer.vonage.com/en/voice/voice-api/concepts/websockets . Audio travels in
**binary** frames of 16-bit signed little-endian linear PCM, mono, at the rate of the NCCO's
``content-type`` (``audio/l16;rate=8000`` or ``16000``), 20 ms per frame both ways. Text frames
carry JSON: Vonage's first one holds the NCCO ``headers`` plus ``content-type`` (newer calls
add ``"event": "websocket:connected"``); later ones are events (``websocket:cleared``,
``websocket:notify``, ``websocket:dtmf``). The gateway's text frames are actions (``clear``,
``notify``). There is no stop message: the call leg ends when the socket closes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import assert_never, cast

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
    CallStarted,
    DtmfReceived,
    Event,
    JsonValue,
    MarkReached,
)
from voicegate.codecs.wire import JsonObject, check_size, parse_json_object, show
from voicegate.errors import ConfigError, LocalProtocolError, RemoteProtocolError
from voicegate.types import AudioEncoding, AudioFormat

#: Default for ``max_message_bytes``: 20 ms at 16 kHz is 640 bytes; headers are <= 512 bytes
#: in the NCCO, but a generous limit costs nothing.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
#: The NCCO ``content-type`` values of a websocket endpoint, by rate.
CONTENT_TYPES = {8000: "audio/l16;rate=8000", 16000: "audio/l16;rate=16000"}
FRAME_MS = 20
#: Header keys of the first message that describe the stream rather than the call's metadata.
_STREAM_KEYS = frozenset({"event", "content-type"})


def vonage_format(content_type: str) -> AudioFormat:
    """The format an NCCO ``content-type`` such as ``audio/l16;rate=16000`` names."""
    for rate, name in CONTENT_TYPES.items():
        if content_type.replace(" ", "").lower() == name:
            return AudioFormat(AudioEncoding.L16, rate)
    raise ConfigError(
        f"vonage content_type must be one of {', '.join(CONTENT_TYPES.values())}, "
        f"got {content_type!r}"
    )


def vonage_capabilities(audio_format: AudioFormat) -> Capabilities:
    """What a Vonage websocket leg can do, carrying ``audio_format`` both ways."""
    return Capabilities(
        dialect="vonage",
        flush_verb='{"action":"clear"}',  # answered by websocket:cleared
        # No hang-up message: closing the socket ends the websocket leg, and the answer NCCO
        # has no action after connect, so the call ends.
        hangup_verb=None,
        playback_acks=True,  # notify -> websocket:notify once the audio before it has played
        pause=False,
        dtmf=True,
        binary_audio=True,
        inbound_formats=tuple(AudioFormat(AudioEncoding.L16, rate) for rate in CONTENT_TYPES),
        outbound_format=audio_format,
        # Any whole number of samples; send() cuts it into 20 ms frames, padding the last.
        outbound_frames=FrameLimits(min_bytes=2, multiple_of=2),
    )


class VonageCodec:
    """One Vonage websocket leg: parses Vonage's frames and writes its audio and actions."""

    def __init__(
        self,
        call_id: str,
        *,
        content_type: str = CONTENT_TYPES[16000],
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if max_message_bytes < 1:
            raise ConfigError(f"vonage max_message_bytes must be positive, got {max_message_bytes}")
        self._call_id = call_id  # the gateway's id, unless the headers carry Vonage's uuid
        self._format = vonage_format(content_type)  # until the first message says otherwise
        self._max_message_bytes = max_message_bytes
        self._phase = CallPhase.AWAITING_START
        self._unknown_messages = 0

    @property
    def capabilities(self) -> Capabilities:
        """Vonage's capabilities; the audio format is the one the first message declared."""
        return vonage_capabilities(self._format)

    @property
    def unknown_messages(self) -> int:
        """How many text messages with an unknown ``event`` were ignored."""
        return self._unknown_messages

    @property
    def phase(self) -> CallPhase:
        """Awaiting the first message, or started (Vonage ends a leg by closing)."""
        return self._phase

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message from Vonage into events."""
        check_size(message, self._max_message_bytes, "vonage")
        if isinstance(message, bytes):
            return [self._audio(message)]
        data = parse_json_object(message, "vonage")
        if self._phase is CallPhase.AWAITING_START:
            return [self._on_connected(data)]
        msg = JsonObject(data, "vonage message")
        kind = msg.optional_text("event")
        match kind:
            case "websocket:notify":
                return [MarkReached(msg.child("payload").text("name"))]
            case "websocket:dtmf":
                return [DtmfReceived(_dtmf_digit(msg))]
            case "websocket:cleared":
                return []  # the flush was done; the ledger settled it when clear went out
            case _:
                self._unknown_messages += 1  # a newer Vonage event: ignored, but counted
                return []

    def _audio(self, payload: bytes) -> AudioReceived:
        if self._phase is CallPhase.AWAITING_START:
            raise RemoteProtocolError(
                f"vonage: a binary frame of {len(payload)} bytes arrived before the first "
                "text message (content-type)"
            )
        if not payload or len(payload) % 2:
            raise RemoteProtocolError(
                f"vonage: a binary frame of {len(payload)} bytes is not whole 16-bit samples"
            )
        return AudioReceived(payload=payload, audio_format=self._format)

    def _on_connected(self, data: Mapping[str, object]) -> CallStarted:
        """The first text message: ``content-type`` and the NCCO headers."""
        msg = JsonObject(data, "vonage first message")
        event = msg.optional_text("event")
        if event not in (None, "websocket:connected"):
            raise msg.error("event", f"must be 'websocket:connected', got {show(event)}")
        content_type = msg.text("content-type")
        try:
            audio_format = vonage_format(content_type)
        except ConfigError:
            problem = f"must be audio/l16 at 8000 or 16000 Hz, got {show(content_type)}"
            raise msg.error("content-type", problem) from None
        # Parsed JSON: every value is a JsonValue.
        headers = {k: cast(JsonValue, v) for k, v in data.items() if k not in _STREAM_KEYS}
        uuid = headers.get("uuid")
        started = CallStarted(
            stream_id=self._call_id,
            call_id=uuid if isinstance(uuid, str) and uuid else self._call_id,
            audio_format=audio_format,
            metadata=headers,
        )
        self._format = audio_format
        self._phase = CallPhase.STARTED
        return started

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """Write one command: binary 20 ms audio frames, or a JSON action."""
        match command:
            case Hangup():
                return []  # the session closes the socket; see vonage_capabilities
            case PublishEvent():
                return []  # Vonage has no message for it (informational only)
            case PausePlayback() | ResumePlayback():
                raise LocalProtocolError("vonage: websockets have no pause (capabilities)")
            case AcceptCall():
                self._refuse_before_start(command)
                return []  # Vonage expects no reply to its first message
            case PlayAudio(payload=payload):
                self._refuse_before_start(command)
                return list(self._frames(payload))
            case SetMark(name=name):
                if not name:
                    raise LocalProtocolError("vonage: SetMark needs a non-empty name")
                return self._action(command, {"action": "notify", "payload": {"name": name}})
            case ClearAudio():
                return self._action(command, {"action": "clear"})
            case _:
                assert_never(command)

    def _frames(self, payload: bytes) -> list[bytes]:
        """``payload`` as 20 ms binary frames; the last is padded with silence to 20 ms."""
        problem = self.capabilities.outbound_frames.violation(len(payload))
        if problem:
            raise LocalProtocolError(f"vonage: PlayAudio payload of {problem}")
        size = self._format.bytes_for_ms(FRAME_MS)
        frames = [payload[at : at + size] for at in range(0, len(payload), size)]
        frames[-1] += bytes(size - len(frames[-1]))
        return frames

    def _action(self, command: Command, action: Mapping[str, object]) -> list[str | bytes]:
        self._refuse_before_start(command)
        return [json.dumps(action, separators=(",", ":"))]

    def _refuse_before_start(self, command: Command) -> None:
        if self._phase is CallPhase.AWAITING_START:
            name = type(command).__name__
            raise LocalProtocolError(f"vonage: {name} before the first message (no format yet)")


def _dtmf_digit(msg: JsonObject) -> str:
    """``digit`` at the top level, or ``dtmf.digit`` (both shapes seen; providers.md §b.3)."""
    nested = msg.optional_child("dtmf")
    if nested is not None and not msg.has("digit"):
        return nested.dtmf_digit("digit")
    return msg.dtmf_digit("digit")

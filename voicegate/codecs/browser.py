"""voicegate's own browser dialect, as a sans-I/O codec (spec: docs/protocols/browser.md).

Audio travels as binary frames of PCM16 little-endian mono, at the rate the client declares in
``start`` (in) and the rate the gateway announces in ``started`` (out); control messages are
JSON text frames with a ``type`` key. Marks and clear follow Twilio's semantics (providers.md
§b.1): the client echoes a mark once the audio before it has played or was dropped by a clear.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, assert_never

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
    CallEnded,
    CallStarted,
    DtmfReceived,
    Event,
    MarkReached,
)
from voicegate.codecs.wire import JsonObject, check_size, parse_json_object, show
from voicegate.errors import ConfigError, LocalProtocolError, RemoteProtocolError
from voicegate.types import AudioEncoding, AudioFormat

#: The protocol version this codec speaks; ``start`` may name it, ``started`` always does.
PROTOCOL_VERSION = 1
#: Rates a client may capture at and the gateway may play at (common AudioContext rates).
SAMPLE_RATES = (8000, 16000, 24000, 48000)
#: 64 KiB holds 680 ms of 48 kHz PCM16; clients should send 20 ms frames (1920 bytes).
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
_PCM16_BYTES = 2


def pcm16(sample_rate: int) -> AudioFormat:
    """PCM16 little-endian mono at ``sample_rate``: the only audio format of this dialect."""
    return AudioFormat(AudioEncoding.L16, sample_rate)


class BrowserCodec:
    """One browser call: binary PCM16 frames plus JSON control messages."""

    def __init__(
        self,
        call_id: str,
        *,
        output_sample_rate: int = 16000,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if output_sample_rate not in SAMPLE_RATES:
            raise ConfigError(
                f"browser output sample rate {output_sample_rate} not in {SAMPLE_RATES}"
            )
        if max_message_bytes < _PCM16_BYTES:
            raise ConfigError(f"browser max_message_bytes too small: {max_message_bytes}")
        self._call_id = call_id
        self._max_message_bytes = max_message_bytes
        self._capabilities = _capabilities(pcm16(output_sample_rate), max_message_bytes)
        self._phase = CallPhase.AWAITING_START
        self._input_format: AudioFormat | None = None
        self._samples_received = 0  # media time of the next inbound frame (design §6)
        self._accepted = False
        self._hung_up = False
        self._unknown_messages = 0

    @property
    def capabilities(self) -> Capabilities:
        """What the browser dialect can do, with this call's output rate."""
        return self._capabilities

    @property
    def unknown_messages(self) -> int:
        """How many text messages with an unknown ``type`` were ignored."""
        return self._unknown_messages

    @property
    def phase(self) -> CallPhase:
        """Where the call is: awaiting the client's ``start``, started, or ended by ``stop``."""
        return self._phase

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message from the browser into events."""
        check_size(message, self._max_message_bytes, "browser")
        if isinstance(message, bytes):
            return [self._on_audio(message)]
        data = parse_json_object(message, "browser")
        kind = JsonObject(data, "browser message").text("type")
        msg = JsonObject(data, f"browser {show(kind)} message")
        match kind:
            case "start":
                return [self._on_start(msg)]
            case "dtmf" | "mark" | "stop":
                self._require_started(show(kind) + " message")
                return [self._on_control(kind, msg)]
            case _:
                # Newer clients may send messages this gateway does not know (browser.md §8).
                self._unknown_messages += 1
                return []

    def _on_start(self, msg: JsonObject) -> CallStarted:
        if self._phase is not CallPhase.AWAITING_START:
            state = "ended" if self._phase is CallPhase.ENDED else "started"
            raise RemoteProtocolError(f"browser 'start' message: the call has already {state}")
        version = msg.optional_integer("version")
        if version is not None and version != PROTOCOL_VERSION:
            raise msg.error("version", f"{version} is not supported (this gateway speaks 1)")
        sample_rate = msg.integer("sampleRate")
        if sample_rate not in SAMPLE_RATES:
            raise msg.error("sampleRate", f"{sample_rate} is not one of {_rates()}")
        started = CallStarted(
            stream_id=self._call_id,
            call_id=self._call_id,
            audio_format=pcm16(sample_rate),
            metadata=msg.json_mapping("metadata"),
        )
        self._input_format = started.audio_format
        self._phase = CallPhase.STARTED
        return started

    def _on_control(self, kind: str, msg: JsonObject) -> Event:
        match kind:
            case "dtmf":
                return DtmfReceived(msg.dtmf_digit("digit"))
            case "mark":
                return MarkReached(msg.text("name"))
            case _:  # "stop"
                reason = msg.optional_text("reason") or "client sent stop"
                self._phase = CallPhase.ENDED
                return CallEnded(reason)

    def _on_audio(self, frame: bytes) -> AudioReceived:
        audio_format = self._require_started(f"binary frame of {len(frame)} bytes")
        if not frame or len(frame) % _PCM16_BYTES:
            raise RemoteProtocolError(
                f"browser: binary frame of {len(frame)} bytes; PCM16 frames hold whole 2-byte "
                "samples, at least one"
            )
        timestamp_ms = self._samples_received * 1000 // audio_format.sample_rate
        self._samples_received += len(frame) // _PCM16_BYTES
        return AudioReceived(payload=frame, audio_format=audio_format, timestamp_ms=timestamp_ms)

    def _require_started(self, what: str) -> AudioFormat:
        if self._input_format is None:
            raise RemoteProtocolError(f"browser: {what} arrived before 'start'")
        if self._phase is CallPhase.ENDED:
            raise RemoteProtocolError(f"browser: {what} arrived after 'stop'")
        return self._input_format

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """Write one command as browser messages (binary audio, or JSON control)."""
        if self._hung_up or self._phase is CallPhase.ENDED:
            return []  # the call is over: there is no one left to hear it
        match command:
            case Hangup(reason=reason):
                # Allowed before start too: that is how the gateway refuses a call.
                self._hung_up = True
                return [_control({"type": "stop", "reason": reason})]
            case PausePlayback() | ResumePlayback():
                raise LocalProtocolError("browser: the dialect has no pause (capabilities.pause)")
            case AcceptCall():
                return [self._accept()]
            case PlayAudio(payload=payload):
                self._require_accepted(command)
                problem = self._capabilities.outbound_frames.violation(len(payload))
                if problem:
                    raise LocalProtocolError(f"browser: PlayAudio payload of {problem}")
                return [payload]
            case SetMark(name=name):
                self._require_accepted(command)
                if not name:
                    raise LocalProtocolError("browser: SetMark needs a non-empty name")
                return [_control({"type": "mark", "name": name})]
            case ClearAudio():
                self._require_accepted(command)
                return [_control({"type": "clear"})]
            case PublishEvent(record=record):
                self._require_accepted(command)
                return [_event(record)]
            case _:
                assert_never(command)

    def _accept(self) -> str:
        """The ``started`` reply: tells the client the output rate before any audio flows."""
        if self._phase is CallPhase.AWAITING_START:
            raise LocalProtocolError("browser: AcceptCall before the client's 'start'")
        if self._accepted:
            raise LocalProtocolError("browser: AcceptCall sent twice")
        self._accepted = True
        return _control(
            {
                "type": "started",
                "version": PROTOCOL_VERSION,
                "callId": self._call_id,
                "sampleRate": self._capabilities.outbound_format.sample_rate,
            }
        )

    def _require_accepted(self, command: Command) -> None:
        # Until `started`, the client does not know the output rate (browser.md §3, §5).
        if not self._accepted:
            raise LocalProtocolError(f"browser: {type(command).__name__} before AcceptCall")


def _capabilities(output: AudioFormat, max_message_bytes: int) -> Capabilities:
    return Capabilities(
        dialect="browser",
        flush_verb="clear",
        hangup_verb="stop",
        playback_acks=True,
        pause=False,
        dtmf=True,
        binary_audio=True,
        inbound_formats=tuple(pcm16(rate) for rate in SAMPLE_RATES),
        outbound_format=output,
        outbound_frames=FrameLimits(
            min_bytes=_PCM16_BYTES, max_bytes=max_message_bytes, multiple_of=_PCM16_BYTES
        ),
    )


def _control(message: dict[str, object]) -> str:
    return json.dumps(message, separators=(",", ":"))


def _event(record: Mapping[str, Any]) -> str:
    """``{"type":"event", ...record}`` (browser.md §5): the record's keys follow ``type``."""
    if "type" in record:
        raise LocalProtocolError("browser: a PublishEvent record may not have a 'type' key")
    # default=str: a tool's result may hold values JSON has no type for (dates, decimals).
    return json.dumps({"type": "event", **record}, separators=(",", ":"), default=str)


def _rates() -> str:
    return ", ".join(str(rate) for rate in SAMPLE_RATES)

"""The socket drachtio's ``mod_audio_fork`` speaks, shared by the FreeSWITCH and Jambonz dialects.

Jambonz's ``listen`` verb runs its own build of ``mod_audio_fork`` (jambonz freeswitch-modules
``mod_audio_fork/lws_glue.cpp``), so both dialects share one shape of socket
(shared/spec/providers.md §b.9; drachtio-freeswitch-modules ``modules/mod_audio_fork/README.md``):
one text frame of metadata first, then binary frames of 16-bit little-endian PCM; later text
frames are JSON; the server stops playback with ``{"type":"killAudio"}`` and asks for the end
of the call with ``{"type":"disconnect"}``. :class:`AudioForkCodec` holds that; a dialect writes
its first message, how bot audio goes back (binary on Jambonz, ``playAudio`` JSON on
FreeSWITCH), and what a binary frame before the metadata means.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import cast

from voicegate.codecs.base import CallPhase, Capabilities
from voicegate.codecs.commands import ClearAudio, Command, Hangup, PlayAudio, SetMark
from voicegate.codecs.events import AudioReceived, CallStarted, DtmfReceived, Event, JsonValue
from voicegate.codecs.stream import StreamCodec
from voicegate.codecs.wire import JsonObject, check_size, parse_json_object, show
from voicegate.errors import LocalProtocolError, RemoteProtocolError
from voicegate.types import AudioFormat

#: The flush: "Any current audio being played to the caller will be immediately stopped"
#: (mod_audio_fork README, killAudio); lws_glue.cpp sets CF_BREAK on the channel.
KILL_AUDIO = '{"type":"killAudio"}'
#: The hang-up request: the module raises ``mod_audio_fork::disconnect`` and leaves tearing
#: down the call to the application (README, disconnect); Jambonz ends the listen.
DISCONNECT = '{"type":"disconnect"}'
#: Keys of the first message that describe the stream rather than the call.
STREAM_KEYS = frozenset({"sampleRate", "mixType"})


def check_mono(msg: JsonObject) -> None:
    """A ``mixType`` other than mono carries the bot too (mixed) or two channels (stereo)."""
    mix = msg.optional_text("mixType") or "mono"
    if mix != "mono":
        raise msg.error("mixType", f"must be 'mono' (one caller channel), got {show(mix)}")


class AudioForkCodec(StreamCodec, ABC):
    """One mod_audio_fork socket: metadata, binary PCM in, killAudio and disconnect out."""

    def __init__(self, capabilities: Capabilities, call_id: str, *, max_message_bytes: int):
        super().__init__(capabilities, max_message_bytes=max_message_bytes)
        self._call_id = call_id  # the gateway's id, unless the metadata names the call

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message into events."""
        check_size(message, self._max_message_bytes, self._dialect)
        if isinstance(message, bytes):
            return self._binary(message)
        data = parse_json_object(message, self._dialect)
        if self.phase is CallPhase.AWAITING_START:
            started = self._on_first(data)
            self._begin(started)
            return [started]
        msg = JsonObject(data, f"{self._dialect} message")
        self._require_started("dtmf")
        # Jambonz's passDtmf, and what docs/protocols/freeswitch.md's DTMF hook sends.
        if msg.optional_text("event") == "dtmf":
            return [DtmfReceived(msg.dtmf_digit("dtmf"))]
        return self._ignored()

    def _binary(self, payload: bytes) -> list[Event]:
        """A binary frame: caller audio once the metadata came."""
        if self.phase is CallPhase.AWAITING_START:
            raise RemoteProtocolError(
                f"{self._dialect}: a binary frame of {len(payload)} bytes arrived before the "
                "first text message (the call attributes)"
            )
        return [self._pcm(payload)]

    def _pcm(self, payload: bytes) -> AudioReceived:
        self._require_started("audio")
        self._check_samples(payload)
        return AudioReceived(payload=payload, audio_format=self._capabilities.outbound_format)

    def _check_samples(self, payload: bytes) -> None:
        if not payload or len(payload) % 2:
            raise RemoteProtocolError(
                f"{self._dialect}: a binary frame of {len(payload)} bytes is not whole "
                "16-bit samples"
            )

    def _begin(self, started: CallStarted) -> None:
        """A valid start: the call's formats are fixed and its stream runs."""
        self._capabilities = self._capabilities_for(started)
        self._started()

    def _call_started(
        self,
        data: Mapping[str, object],
        audio_format: AudioFormat,
        call_id: str | None,
        account_id: str | None = None,
    ) -> CallStarted:
        """The start: every key of the first message but the stream's own is call metadata."""
        # Parsed JSON: every value is a JsonValue.
        metadata = {k: cast(JsonValue, v) for k, v in data.items() if k not in STREAM_KEYS}
        return CallStarted(
            stream_id=self._call_id,
            call_id=call_id or self._call_id,
            audio_format=audio_format,
            metadata=metadata,
            account_id=account_id,
        )

    @abstractmethod
    def _on_first(self, data: Mapping[str, object]) -> CallStarted:
        """The first text message as the call's start (the dialect's own shape)."""

    @abstractmethod
    def _capabilities_for(self, started: CallStarted) -> Capabilities:
        """The capabilities once the start fixed the call's audio format."""

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """Write one command: bot audio, killAudio, disconnect; no marks exist."""
        match command:
            case PlayAudio(payload=payload):
                self._refuse_before_start(command)
                if not payload or len(payload) % 2:
                    raise LocalProtocolError(
                        f"{self._dialect}: PlayAudio payload of {len(payload)} bytes is not "
                        "whole samples"
                    )
                return self._play(command, payload)
            case SetMark():
                self._refuse_before_start(command)
                return []  # no acknowledgement exists; the session estimates (capabilities)
            case ClearAudio():
                return self._json(command, {"type": "killAudio"})
            case Hangup(transfer_to=target):
                if self.phase is CallPhase.AWAITING_START:
                    return []  # a refused connection: closing the socket is the answer
                return self._json(command, self._ending(target))
            case _:
                return self._common(command)

    def _ending(self, transfer_to: str) -> dict[str, object]:
        """The message that ends the call (``transfer_to``: where the engine sent it)."""
        return {"type": "disconnect"}

    @abstractmethod
    def _play(self, command: PlayAudio, payload: bytes) -> list[str | bytes]:
        """Whole samples of bot audio in the dialect's wire form."""

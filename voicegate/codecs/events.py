"""What a codec reports from the wire: the closed set of inbound events.

Every provider dialect (shared/spec/providers.md §b) maps onto these few events; the session
dispatches on them with ``match`` (design §8: a small closed set, not a zoo of classes).
Playback acknowledgements with other names (Plivo ``playedStream``, Vonage
``websocket:notify``, Asterisk ``MEDIA_MARK_PROCESSED``) all become :class:`MarkReached`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from voicegate.types import AudioFormat

#: A value decoded from a peer's JSON (metadata, custom parameters).
JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]

#: Which side of the call an audio chunk carries: the caller (``inbound``) or, on provider
#: forks that stream both tracks (Twilio ``<Start><Stream track="both_tracks">``), the far end.
AudioTrack = Literal["inbound", "outbound"]


@dataclass(frozen=True, slots=True)
class CallStarted:
    """The peer opened a media stream: who it is, what it carries, what metadata came along."""

    stream_id: str
    call_id: str
    audio_format: AudioFormat
    # Twilio customParameters, browser metadata, Vonage headers, Genesys inputVariables...
    # Excluded from the hash: a mapping is not hashable, and equality still compares it.
    metadata: Mapping[str, JsonValue] = field(default_factory=dict, hash=False)
    account_id: str | None = None


@dataclass(frozen=True, slots=True)
class AudioReceived:
    """A chunk of caller audio, still in the wire format (codecs never transcode)."""

    payload: bytes
    audio_format: AudioFormat
    # Media time of the chunk's first sample, from the wire or from counted samples.
    timestamp_ms: int | None = None
    # The provider's chunk counter, for providers that may reorder (Telnyx, providers.md §b.4).
    chunk: int | None = None
    track: AudioTrack = "inbound"


@dataclass(frozen=True, slots=True)
class DtmfReceived:
    """The caller pressed a key: one of ``0-9 * # A-D``."""

    digit: str


@dataclass(frozen=True, slots=True)
class MarkReached:
    """The peer played (or, after a clear, discarded) all audio queued before this mark."""

    name: str


@dataclass(frozen=True, slots=True)
class CallEnded:
    """The peer ended the media stream; nothing more will arrive."""

    reason: str


@dataclass(frozen=True, slots=True)
class TranscriptReceived:
    """What the caller said, transcribed by the provider itself (ConversationRelay ``prompt``).

    ``final`` is False for a partial transcript of an utterance still going on.
    """

    text: str
    final: bool = True
    language: str = ""


@dataclass(frozen=True, slots=True)
class PlaybackInterrupted:
    """The provider stopped the bot's speech because the caller spoke (its own flush).

    ``heard`` is the bot's text the caller heard before that (ConversationRelay
    ``utteranceUntilInterrupt``); ``duration_ms`` how long it had played.
    """

    heard: str
    duration_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ProviderError:
    """The provider reports an error in the session; the call goes on."""

    description: str


@dataclass(frozen=True, slots=True)
class ProtocolReply:
    """Messages the peer's protocol wants back at once, e.g. Genesys AudioHook's ``pong`` to a
    ``ping`` and ``closed`` to a ``close``; the session sends them before anything else."""

    messages: tuple[str | bytes, ...]


#: Everything ``Codec.receive`` can return.
Event = (
    CallStarted
    | AudioReceived
    | DtmfReceived
    | MarkReached
    | CallEnded
    | ProtocolReply
    | TranscriptReceived
    | PlaybackInterrupted
    | ProviderError
)

"""What every codec offers the session: the ``Codec`` protocol and its ``Capabilities`` as data.

The session never asks "which provider is this?"; it reads the capabilities (the columns of
the barge-in matrix, shared/spec/providers.md §b.0) and sends the commands they allow.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from voicegate.codecs.commands import Command
from voicegate.codecs.events import Event
from voicegate.types import AudioFormat


@dataclass(frozen=True, slots=True)
class FrameLimits:
    """Which outbound audio payload sizes (in bytes) the peer accepts in one message."""

    min_bytes: int = 1
    max_bytes: int | None = None  # None: the provider documents no upper limit
    multiple_of: int = 1  # e.g. whole samples (2 for PCM16) or Exotel's 320-byte blocks

    def violation(self, size: int) -> str | None:
        """Why a payload of ``size`` bytes is not allowed, or None when it is."""
        if size < self.min_bytes:
            return f"{size} bytes is below the minimum of {self.min_bytes}"
        if self.max_bytes is not None and size > self.max_bytes:
            return f"{size} bytes is above the maximum of {self.max_bytes}"
        if size % self.multiple_of:
            return f"{size} bytes is not a multiple of {self.multiple_of}"
        return None


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a dialect can do, read by the session instead of branching on the provider."""

    dialect: str
    flush_verb: str  # the wire verb ClearAudio becomes, for logs and docs
    hangup_verb: str | None  # None: hanging up means closing the socket
    playback_acks: bool  # SetMark comes back as MarkReached once played or cleared
    pause: bool  # PausePlayback / ResumePlayback are allowed
    dtmf: bool  # DtmfReceived can arrive
    binary_audio: bool  # audio travels in binary frames rather than base64 in JSON
    inbound_formats: tuple[AudioFormat, ...]  # what CallStarted.audio_format may be
    outbound_format: AudioFormat  # the format PlayAudio payloads must already be in
    outbound_frames: FrameLimits
    transfer_verb: str | None = None  # None: a transfer goes out as the hangup verb


class CallPhase(enum.Enum):
    """Where a media stream is in its life; every dialect walks these in order."""

    AWAITING_START = "awaiting start"
    STARTED = "started"
    ENDED = "ended"


class Codec(Protocol):
    """A sans-I/O provider dialect holding one call's protocol state."""

    @property
    def capabilities(self) -> Capabilities:
        """What this dialect can do (static per codec instance)."""
        ...

    @property
    def unknown_messages(self) -> int:
        """How many messages of a type this codec does not know were ignored."""
        ...

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message (text as str, binary as bytes) into events."""
        ...

    def send(self, command: Command) -> list[str | bytes]:
        """Turn one command into the WebSocket messages to send, in order."""
        ...

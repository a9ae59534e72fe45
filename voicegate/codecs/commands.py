"""What the session asks a codec to put on the wire: the closed set of outbound commands.

Each codec maps these onto its provider's verbs (shared/spec/providers.md §b.0): the flush verb
for :class:`ClearAudio` (Twilio ``clear``, Plivo ``clearAudio``, Genesys ``barge_in`` event,
Asterisk ``FLUSH_MEDIA``...), the playback acknowledgement request for :class:`SetMark` (Twilio
``mark``, Plivo ``checkpoint``, Vonage ``notify``, Asterisk ``MARK_MEDIA``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class AcceptCall:
    """Answer the peer's start; providers that need a reply (browser, Genesys) send it here."""


@dataclass(frozen=True, slots=True)
class PlayAudio:
    """Queue audio for playback; ``payload`` is already in the codec's outbound wire format."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class SetMark:
    """Ask the peer to echo ``name`` once audio queued so far has played or been cleared."""

    name: str


@dataclass(frozen=True, slots=True)
class ClearAudio:
    """Flush: the peer stops playback at once and drops every buffered chunk (barge-in)."""


@dataclass(frozen=True, slots=True)
class PausePlayback:
    """Hold playback without dropping it; only where ``Capabilities.pause`` (Asterisk)."""


@dataclass(frozen=True, slots=True)
class ResumePlayback:
    """Continue playback held by :class:`PausePlayback` (a false interruption)."""


@dataclass(frozen=True, slots=True)
class Hangup:
    """End the call; the session closes the socket after sending what this returns.

    ``transfer_to``: the engine transferred the call there (dialects that hand the call back
    with data say where, e.g. ConversationRelay's ``end`` ``handoffData``).
    """

    reason: str
    transfer_to: str = ""


@dataclass(frozen=True, slots=True)
class PublishEvent:
    """Tell the peer what happened in the call (one timeline record); purely informational.

    Dialects with a channel for it send it (browser ``{"type": "event", ...}``, browser.md §5);
    the others return no messages. ``record`` is JSON-ready and has no ``type`` key.
    """

    record: Mapping[str, Any]


#: Everything ``Codec.send`` accepts.
Command = (
    AcceptCall
    | PlayAudio
    | SetMark
    | ClearAudio
    | PausePlayback
    | ResumePlayback
    | Hangup
    | PublishEvent
)

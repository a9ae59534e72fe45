"""What every telephony dialect codec keeps per call, written once.

Each provider codec holds the same bookkeeping: its capabilities, a count of ignored unknown
messages, where the stream is in its life (:class:`CallPhase`), and the same answers to the
commands that have nothing to do with its wire format (no pause, no timeline channel, no reply
to the start, nothing to send once the stream ended). :class:`StreamCodec` holds that; a
dialect subclasses it and writes only its ``receive`` and its wire verbs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from voicegate.codecs.base import CallPhase, Capabilities
from voicegate.codecs.commands import (
    AcceptCall,
    Command,
    Hangup,
    PausePlayback,
    PublishEvent,
    ResumePlayback,
)
from voicegate.codecs.events import Event
from voicegate.codecs.wire import show
from voicegate.errors import ConfigError, LocalProtocolError, RemoteProtocolError


class StreamCodec:
    """The per-call state and the command answers every telephony dialect shares."""

    def __init__(self, capabilities: Capabilities, *, max_message_bytes: int) -> None:
        name = capabilities.dialect
        if max_message_bytes < 1:
            raise ConfigError(f"{name} max_message_bytes must be positive, got {max_message_bytes}")
        self._capabilities = capabilities
        self._max_message_bytes = max_message_bytes
        self._phase = CallPhase.AWAITING_START
        self._unknown_messages = 0

    @property
    def capabilities(self) -> Capabilities:
        """What this dialect can do, with the formats this call uses."""
        return self._capabilities

    @property
    def unknown_messages(self) -> int:
        """How many messages of a kind this dialect does not know were ignored."""
        return self._unknown_messages

    @property
    def phase(self) -> CallPhase:
        """Where the stream is: awaiting its start, started, or ended."""
        return self._phase

    @property
    def _dialect(self) -> str:
        return self._capabilities.dialect

    # -- inbound bookkeeping ---------------------------------------------------------------

    def _check_startable(self, kind: str) -> None:
        """A start message may come only once, and never after the stream ended."""
        if self._phase is not CallPhase.AWAITING_START:
            state = "ended" if self._phase is CallPhase.ENDED else "started"
            raise RemoteProtocolError(
                f"{self._dialect} {show(kind)} message: the stream is already {state}"
            )

    def _started(self) -> None:
        """The start message was valid (a rejected one leaves the codec as it was)."""
        self._phase = CallPhase.STARTED

    def _require_started(self, kind: str) -> None:
        """Stream messages need an earlier start and no end yet."""
        if self._phase is not CallPhase.STARTED:
            waiting = self._phase is CallPhase.AWAITING_START
            where = "before the start" if waiting else "after the end"
            raise RemoteProtocolError(f"{self._dialect} {show(kind)} message: arrived {where}")

    def _end(self) -> None:
        self._phase = CallPhase.ENDED

    def _ignored(self) -> list[Event]:
        """A message of a kind this dialect does not know (a newer provider feature): counted."""
        self._unknown_messages += 1
        return []

    # -- outbound --------------------------------------------------------------------------

    def _common(self, command: Command) -> list[str | bytes]:
        """Answer a command with no dialect-specific wire form (the dialect matched the rest)."""
        match command:
            case PublishEvent():
                return []  # telephony dialects have no channel for the timeline
            case AcceptCall():
                self._refuse_before_start(command)
                return []  # the provider expects no reply to its start
            case Hangup() if self._capabilities.hangup_verb is None:
                return []  # the session closes the socket, which ends the provider's leg
            case PausePlayback() | ResumePlayback() if not self._capabilities.pause:
                raise LocalProtocolError(f"{self._dialect}: the provider cannot pause")
        raise LocalProtocolError(f"{self._dialect}: cannot send {type(command).__name__}")

    def _json(self, command: Command, message: Mapping[str, object]) -> list[str | bytes]:
        """One compact JSON text frame; nothing once the stream has ended."""
        self._refuse_before_start(command)
        if self._phase is CallPhase.ENDED:
            return []  # the call is over: there is no one left to hear it
        return [json.dumps(message, separators=(",", ":"))]

    def _refuse_before_start(self, command: Command) -> None:
        if self._phase is CallPhase.AWAITING_START:
            name = type(command).__name__
            raise LocalProtocolError(f"{self._dialect}: {name} before the stream started")

"""Twilio ConversationRelay (text mode) as a sans-I/O codec.

Twilio does the speech recognition and the speech synthesis; the WebSocket carries text
(shared/spec/providers.md §b.2, restating
https://www.twilio.com/docs/voice/conversationrelay/websocket-messages). Every message is a
JSON text frame with a ``type``:

- in: ``setup`` (once, first: ``sessionId``, ``callSid``, ``accountSid``, ``from``, ``to``,
  ``customParameters``...), ``prompt`` (``voicePrompt``, ``lang``, ``last``: false for a
  partial), ``interrupt`` (``utteranceUntilInterrupt``, ``durationUntilInterruptMs``, a number
  or a digit string in Twilio's examples), ``dtmf`` (``digit``), ``error`` (``description``);
- out: ``text`` (``token``, ``last``), ``play`` (``source``, ``loop``), ``sendDigits``
  (``digits``), ``language`` (``ttsLanguage``, ``transcriptionLanguage``) and ``end``
  (``handoffData``: a string, which voicegate fills with JSON).

Twilio stops its own speech when the caller talks over it and says so with ``interrupt``:
that is the flush and the playback report in one (:class:`PlaybackInterrupted`). There are no
marks. The session sends text through the methods below, not through :class:`Command`, whose
audio commands this dialect has no use for; :class:`Hangup` becomes ``end``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from voicegate.codecs.base import CallPhase, Capabilities, FrameLimits
from voicegate.codecs.commands import (
    AcceptCall,
    Command,
    Hangup,
    PublishEvent,
)
from voicegate.codecs.events import (
    CallStarted,
    DtmfReceived,
    Event,
    PlaybackInterrupted,
    ProviderError,
    TranscriptReceived,
)
from voicegate.codecs.wire import JsonObject, json_text_frame, show
from voicegate.errors import ConfigError, LocalProtocolError, RemoteProtocolError
from voicegate.types import TELEPHONE_ULAW

DIALECT = "conversationrelay"
#: A prompt is a sentence or two of text; anything near this is not Twilio.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
#: ``setup`` fields that become call metadata next to ``customParameters``.
_SETUP_FIELDS = ("from", "to", "direction", "callType", "callerName", "forwardedFrom")
#: Handoff reason codes voicegate writes into ``end``'s ``handoffData``.
HANDOFF_TRANSFER = "live-agent-handoff"
HANDOFF_HANGUP = "end-call"

CONVERSATIONRELAY_CAPABILITIES = Capabilities(
    dialect=DIALECT,
    flush_verb="interrupt (Twilio stops its own speech)",
    hangup_verb="end",
    playback_acks=False,  # `interrupt` says what was heard; nothing acknowledges a full play
    pause=False,
    dtmf=True,
    binary_audio=False,
    inbound_formats=(),  # no audio crosses the socket
    outbound_format=TELEPHONE_ULAW,  # unused: text only
    outbound_frames=FrameLimits(),
)


class ConversationRelayCodec:
    """One ConversationRelay session: Twilio's messages in, text tokens and commands out."""

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        if max_message_bytes < 1:
            raise ConfigError(f"max_message_bytes must be positive, got {max_message_bytes}")
        self._max_message_bytes = max_message_bytes
        self._phase = CallPhase.AWAITING_START
        self._unknown_messages = 0

    @property
    def capabilities(self) -> Capabilities:
        """ConversationRelay's capabilities (the same for every call)."""
        return CONVERSATIONRELAY_CAPABILITIES

    @property
    def unknown_messages(self) -> int:
        """How many messages with an unknown ``type`` were ignored."""
        return self._unknown_messages

    @property
    def phase(self) -> CallPhase:
        """Awaiting ``setup``, started, or ended by ``end``."""
        return self._phase

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message from Twilio into events."""
        data = json_text_frame(message, self._max_message_bytes, DIALECT, "ConversationRelay")
        kind = JsonObject(data, f"{DIALECT} message").text("type")
        msg = JsonObject(data, f"{DIALECT} {show(kind)} message")
        if kind == "setup":
            return [self._on_setup(msg)]
        if kind not in ("prompt", "interrupt", "dtmf", "error"):
            self._unknown_messages += 1  # a newer Twilio message: ignored, counted
            return []
        if self._phase is not CallPhase.STARTED:
            raise RemoteProtocolError(f"{DIALECT} {show(kind)} message: arrived before 'setup'")
        return [_on_session_message(kind, msg)]

    def _on_setup(self, msg: JsonObject) -> CallStarted:
        if self._phase is not CallPhase.AWAITING_START:
            raise RemoteProtocolError(f"{DIALECT} 'setup' message: the session already started")
        metadata: dict[str, Any] = {
            name: value for name in _SETUP_FIELDS if (value := msg.optional_text(name))
        }
        metadata.update(msg.string_mapping("customParameters"))
        started = CallStarted(
            stream_id=msg.text("sessionId"),
            call_id=msg.text("callSid"),
            audio_format=TELEPHONE_ULAW,  # what the caller's line carries; never on this socket
            metadata=metadata,
            account_id=msg.optional_text("accountSid"),
        )
        self._phase = CallPhase.STARTED  # once every field was read: a bad setup changes nothing
        return started

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """The shared commands: ``Hangup`` is ``end``; audio commands have no meaning here."""
        match command:
            case Hangup(reason=reason, transfer_to=transfer_to):
                if self._phase is not CallPhase.STARTED:
                    return []  # refused before setup, or already ended: the close says it
                self._phase = CallPhase.ENDED
                return [self.end(handoff_data(reason, transfer_to))]
            case AcceptCall() | PublishEvent():
                return []  # Twilio expects no reply to `setup`; no channel for events
            case _:
                raise LocalProtocolError(f"{DIALECT}: {type(command).__name__} needs audio")

    def text(self, token: str, *, last: bool) -> str:
        """A ``text`` message: a token of the bot's reply; ``last`` closes the reply."""
        return _message({"type": "text", "token": token, "last": last})

    def play(self, source: str, *, loop: int = 1) -> str:
        """A ``play`` message: Twilio plays the audio file at ``source`` (a URL)."""
        if not source:
            raise LocalProtocolError(f"{DIALECT}: play needs a source URL")
        return _message({"type": "play", "source": source, "loop": loop})

    def send_digits(self, digits: str) -> str:
        """A ``sendDigits`` message: Twilio plays these DTMF tones into the call."""
        if not digits or any(d not in "0123456789*#w" for d in digits):
            raise LocalProtocolError(f"{DIALECT}: sendDigits takes 0-9 * # and w, got {digits!r}")
        return _message({"type": "sendDigits", "digits": digits})

    def language(self, tts: str, transcription: str) -> str:
        """A ``language`` message: switch the speech and recognition languages."""
        return _message(
            {"type": "language", "ttsLanguage": tts, "transcriptionLanguage": transcription}
        )

    def end(self, handoff: Mapping[str, str] | None = None) -> str:
        """An ``end`` message; ``handoff`` goes to the ``<Connect action>`` as HandoffData."""
        body: dict[str, object] = {"type": "end"}
        if handoff:
            body["handoffData"] = json.dumps(dict(handoff), separators=(",", ":"))
        return _message(body)


def handoff_data(reason: str, transfer_to: str) -> dict[str, str]:
    """What voicegate hands back to Twilio when it ends the session (read by /action)."""
    if transfer_to:
        return {"reasonCode": HANDOFF_TRANSFER, "reason": reason, "transferTo": transfer_to}
    return {"reasonCode": HANDOFF_HANGUP, "reason": reason}


def _on_session_message(kind: str, msg: JsonObject) -> Event:
    match kind:
        case "prompt":
            text = msg.text("voicePrompt")
            language = msg.optional_text("lang") or ""
            return TranscriptReceived(text, msg.optional_bool("last", True), language)
        case "interrupt":
            heard = msg.optional_text("utteranceUntilInterrupt") or ""
            return PlaybackInterrupted(heard, msg.optional_counter("durationUntilInterruptMs"))
        case "dtmf":
            return DtmfReceived(msg.dtmf_digit("digit"))
        case _:  # "error": Twilio reports it; the session goes on (a failed message is dropped)
            return ProviderError(msg.optional_text("description") or "(no description)")


def _message(body: Mapping[str, object]) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)

"""Genesys Cloud AudioHook (Audio Connector: bidirectional) as a sans-I/O codec.

Wire protocol: shared/spec/providers.md §b.7, checked against the AudioHook protocol
reference https://developer.genesys.cloud/devapps/audiohook/protocol-reference , the features
page https://developer.genesys.cloud/devapps/audiohook/features (Audio Connector: the client
streams only the ``external`` channel and plays what the server sends back) and the message
types of Genesys's reference server (purecloudlabs/audiohook-reference-implementation,
``protocol/message.ts``). Genesys is the client. Every text frame is a JSON envelope
``{version: "2", id, type, seq, parameters}``; the client adds ``serverseq`` and ``position``,
the server ``clientseq`` (the last client ``seq`` it saw). Audio is binary PCMU at 8 kHz both
ways. The client opens with ``open`` and sends no audio before the server's ``opened``
(:class:`AcceptCall`); ``ping`` wants ``pong``, ``close`` wants ``closed`` (both sent at once
as :class:`ProtocolReply`), ``update`` wants ``updated``. The Audio Connector adds ``dtmf`` and
``playback_started``/``playback_completed`` (whole-queue notices, no marks: the gateway
estimates what was heard from its playout clock); the server stops queued playback with an
``event`` whose entity is ``barge_in`` and ends the call with ``disconnect``.
"""

from __future__ import annotations

import json

from voicegate.codecs.base import CallPhase, Capabilities, FrameLimits
from voicegate.codecs.commands import AcceptCall, ClearAudio, Command, Hangup, PlayAudio, SetMark
from voicegate.codecs.events import (
    AudioReceived,
    CallEnded,
    CallStarted,
    DtmfReceived,
    Event,
    JsonValue,
    ProtocolReply,
)
from voicegate.codecs.stream import StreamCodec
from voicegate.codecs.wire import JsonObject, check_size, parse_json_object, show
from voicegate.errors import LocalProtocolError, RemoteProtocolError
from voicegate.types import TELEPHONE_ULAW

VERSION = "2"
#: Default for ``max_message_bytes``: an ``open`` with input variables is a few kB.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
#: Genesys rate-limits the server's binary messages to about 5 per second on average, 25 at
#: once (https://developer.genesys.cloud/organization/organization/limits#audiohook, quoted
#: in providers.md §b.7): 200 ms of PCMU per message keeps a call at 5 per second.
MIN_AUDIO_BYTES = TELEPHONE_ULAW.bytes_for_ms(200)
#: The only media voicegate takes: the Audio Connector's one external channel.
MEDIA = {"type": "audio", "format": "PCMU", "channels": ["external"], "rate": 8000}
BARGE_IN = "barge_in"

#: Client messages that need nothing from the gateway (pause state, discarded audio, the
#: whole-queue playback notices).
_QUIET = frozenset({"paused", "resumed", "discarded", "playback_started", "playback_completed"})


def genesys_capabilities() -> Capabilities:
    """What an Audio Connector session can do."""
    return Capabilities(
        dialect="genesys",
        flush_verb="event/barge_in",
        hangup_verb="disconnect",  # reason "completed"; Genesys answers with close
        playback_acks=False,  # playback_completed covers the whole queue: the clock estimates
        pause=False,  # AudioHook's pause stops the caller's stream, not playback
        dtmf=True,
        binary_audio=True,
        inbound_formats=(TELEPHONE_ULAW,),
        outbound_format=TELEPHONE_ULAW,
        # Any size is played; min_bytes makes the session send 200 ms per message, inside
        # Genesys's rate limit (session.py, provider_pace).
        outbound_frames=FrameLimits(min_bytes=MIN_AUDIO_BYTES),
    )


class GenesysCodec(StreamCodec):
    """One AudioHook session: parses Genesys's messages and writes the server's."""

    def __init__(
        self,
        *,
        session_id: str | None = None,  # the Audiohook-Session-Id header, which open must match
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        super().__init__(genesys_capabilities(), max_message_bytes=max_message_bytes)
        self._session_id = session_id
        self._client_seq = 0  # the last seq Genesys sent
        self._server_seq = 0
        self._opened = False

    @property
    def session_id(self) -> str | None:
        """The AudioHook session id (``id`` of every message)."""
        return self._session_id

    # -- inbound ---------------------------------------------------------------------------

    def receive(self, message: str | bytes) -> list[Event]:
        """Parse one WebSocket message from Genesys into events."""
        check_size(message, self._max_message_bytes, "genesys")
        if isinstance(message, bytes):
            return [self._audio(message)]
        before = (self._client_seq, self._session_id)
        try:
            return self._on_text(self._envelope(parse_json_object(message, "genesys")))
        except RemoteProtocolError:
            self._client_seq, self._session_id = before  # a rejected message changes nothing
            raise

    def _on_text(self, msg: JsonObject) -> list[Event]:
        kind = msg.text("type")
        if kind == "open":
            return [self._on_open(msg)]
        self._require_started(kind)
        parameters = msg.optional_child("parameters")
        match kind:
            case "ping":
                return [ProtocolReply((self._message("pong", {}),))]
            case "update":
                return [ProtocolReply((self._message("updated", {}),))]
            case "close":
                reason = parameters.optional_text("reason") if parameters else None
                closed = ProtocolReply((self._message("closed", {}),))
                self._end()
                return [closed, CallEnded(f"genesys sent close ({reason or 'no reason'})")]
            case "dtmf":
                digits = msg.child("parameters")
                return [DtmfReceived(digits.dtmf_digit("digit"))]
            case "error":
                detail = _error_text(parameters)
                raise RemoteProtocolError(f"genesys sent an error: {detail}")
            case quiet if quiet in _QUIET:
                return []
            case _:
                return self._ignored()

    def _envelope(self, data: dict[str, object]) -> JsonObject:
        """Check the envelope: version 2, this session's id, seq increasing by one."""
        msg = JsonObject(data, f"genesys {show(data.get('type'))} message")
        version = msg.text("version")
        if version != VERSION:
            raise msg.error("version", f"must be '2', got {show(version)}")
        session_id = msg.text("id")
        if self._session_id is not None and session_id != self._session_id:
            raise msg.error(
                "id", f"{show(session_id)} is not this session's {show(self._session_id)}"
            )
        seq = msg.integer("seq")
        if seq != self._client_seq + 1:
            raise msg.error(
                "seq", f"must be {self._client_seq + 1} (one more than the last), got {seq}"
            )
        self._client_seq = seq
        self._session_id = session_id
        return msg

    def _audio(self, payload: bytes) -> AudioReceived:
        if not self._opened:
            raise RemoteProtocolError(
                f"genesys: a binary frame of {len(payload)} bytes arrived before 'opened'"
            )
        self._require_started("audio")
        if not payload:
            raise RemoteProtocolError("genesys: an empty binary frame")
        return AudioReceived(payload=payload, audio_format=TELEPHONE_ULAW)

    def _on_open(self, msg: JsonObject) -> CallStarted:
        self._check_startable("open")
        parameters = msg.child("parameters")
        _check_media(parameters)
        participant = parameters.optional_child("participant")
        metadata: dict[str, JsonValue] = {}
        for key in ("ani", "aniName", "dnis"):
            value = participant.optional_text(key) if participant is not None else None
            if value is not None:
                metadata[key] = value
        language = parameters.optional_text("language")
        if language is not None:
            metadata["language"] = language
        # Audio Connector: the Architect flow's input variables (providers.md §b.7).
        metadata.update(parameters.json_mapping("inputVariables"))
        started = CallStarted(
            stream_id=msg.text("id"),
            call_id=parameters.text("conversationId"),
            audio_format=TELEPHONE_ULAW,
            metadata=metadata,
            account_id=parameters.optional_text("organizationId"),
        )
        self._started()
        return started

    # -- outbound --------------------------------------------------------------------------

    def send(self, command: Command) -> list[str | bytes]:
        """Write one command: opened, binary PCMU, the barge_in event, disconnect."""
        match command:
            case AcceptCall():
                self._refuse_before_start(command)
                self._opened = True
                return [self._message("opened", {"startPaused": False, "media": [MEDIA]})]
            case PlayAudio(payload=payload):
                self._refuse_before_start(command)
                if not payload:
                    raise LocalProtocolError("genesys: PlayAudio needs audio")
                return [] if self.phase is CallPhase.ENDED else [payload]
            case SetMark():
                self._refuse_before_start(command)
                return []  # no marks in AudioHook; the session estimates (capabilities)
            case ClearAudio():
                self._refuse_before_start(command)
                entities = [{"type": BARGE_IN, "data": {}}]
                return self._live("event", {"entities": entities})
            case Hangup():
                if self.phase is CallPhase.AWAITING_START:
                    return []  # a refused connection: closing the socket is the answer
                return self._live("disconnect", {"reason": "completed"})
            case _:
                return self._common(command)

    def _live(self, kind: str, parameters: dict[str, object]) -> list[str | bytes]:
        """A server message, unless the session has closed."""
        return [] if self.phase is CallPhase.ENDED else [self._message(kind, parameters)]

    def _message(self, kind: str, parameters: dict[str, object]) -> str:
        """A server message in the envelope: next seq, the last client seq, the session id."""
        self._server_seq += 1
        envelope = {
            "version": VERSION,
            "type": kind,
            "seq": self._server_seq,
            "clientseq": self._client_seq,
            "id": self._session_id,
            "parameters": parameters,
        }
        return json.dumps(envelope, separators=(",", ":"))


def _check_media(parameters: JsonObject) -> None:
    """The open must offer PCMU at 8 kHz with the external channel only (Audio Connector)."""
    offers = parameters.object_list("media")
    if not any(_is_ours(offer) for offer in offers):
        raise parameters.error(
            "media", "offers no PCMU at 8000 Hz on the external channel alone (Audio Connector)"
        )


def _is_ours(offer: JsonObject) -> bool:
    return all(offer.value(key) == MEDIA[key] for key in ("type", "format", "rate", "channels"))


def _error_text(parameters: JsonObject | None) -> str:
    """An error message's code and text, shown leniently."""
    if parameters is None:
        return "no detail given"
    code = parameters.optional_integer("code")
    text = parameters.optional_text("message")
    return " ".join(str(part) for part in (code, text) if part is not None) or "no detail given"

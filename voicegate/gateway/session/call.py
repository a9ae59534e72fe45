"""One call's lifetime: admitted at its start message, served, and cleaned up at its end.

Design §2 and §8: ``CallSession`` owns one ``asyncio.TaskGroup`` per call, the receive loop
(guarded by the watchdog and the inbound pacer) and everything that must be closed or
released when the call ends, whatever ended it: the recogniser's stream, the cross-node lease
and the engine's session. Each provider event is handed to the part it concerns; a peer's
protocol error closes this call only, with its reason. Admission (the gate, the lease, the
engine's ``open``) and refusal are here too, because they decide whether the parts exist at
all; once the call is admitted, ``session/wiring.py`` builds them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

from voicegate.codecs import (
    AcceptCall,
    AudioReceived,
    CallEnded,
    CallStarted,
    Codec,
    DtmfReceived,
    Hangup,
    MarkReached,
    ProtocolReply,
)
from voicegate.codecs import Event as CodecEvent
from voicegate.engine.seam import SESSION_START_INPUT, CallInfo, speaks_first
from voicegate.errors import LocalProtocolError, RemoteProtocolError, StoreError
from voicegate.gateway import bargein
from voicegate.gateway.pacing import ControlPacer, InboundPacer
from voicegate.gateway.session.clock import CallClock
from voicegate.gateway.session.outbound import Sender
from voicegate.gateway.session.settings import CallServices, SessionSettings
from voicegate.gateway.session.wiring import CallParts
from voicegate.gateway.timeline import Record, Timeline
from voicegate.gateway.transport import (
    CLOSE_NORMAL,
    CLOSE_TRY_AGAIN_LATER,
    CallGate,
    Refusal,
    Transport,
    close_code_for,
)
from voicegate.gateway.watchdog import Watchdog
from voicegate.speech.ports import SpeechToTextStream

log = logging.getLogger(__name__)

#: Messages handled back to back before the receive loop yields to other calls: a peer whose
#: frames are already buffered would otherwise hold the event loop (issue 12 item 4).
YIELD_EVERY = 32


class CallSession:
    """Runs one call from its start message to its end."""

    def __init__(
        self,
        transport: Transport,
        codec: Codec,
        services: CallServices,
        settings: SessionSettings,
        gate: CallGate,
    ) -> None:
        self._transport = transport
        self._codec = codec
        self._services = services
        self._settings = settings
        self._gate = gate
        # Records not yet published to the peer; playback sends them (browser.md §5).
        self._unpublished: deque[Record] = deque()
        limits = settings.limits
        observers = () if services.observer is None else (services.observer(),)
        self.timeline = Timeline(
            listeners=(self._unpublished.append, gate.record, *observers),
            max_records=limits.timeline_max_records,
            max_chars=limits.timeline_max_chars,
        )
        self._sender = Sender(codec, transport, self._unpublished)
        self._pacer = InboundPacer(limits, asyncio.get_running_loop().time)
        self._control = ControlPacer(limits, asyncio.get_running_loop().time)
        self._engine_open = False
        self._leased = ""
        self._clock = CallClock(self.timeline)
        self._call_id = ""
        self._tasks: asyncio.TaskGroup | None = None
        self._stt: SpeechToTextStream | None = None
        # Made once the call is admitted (its start message gives the formats).
        self._parts: CallParts | None = None

    @property
    def call_id(self) -> str:
        """The provider's call id, once the call has started (and was admitted)."""
        return self._call_id

    async def run(self) -> None:
        """Serve the call until the peer stops, hangs up or breaks the protocol."""
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                try:
                    await self._receive_loop()
                finally:
                    await self._shutdown()
        finally:
            self._record_pacing()
            if self._leased and self._services.leases is not None:
                await self._services.leases.release(self._leased)
            if self._engine_open:
                # Keyed by the gateway's own id: this call's cleanup can never close another
                # call's engine session, whatever CallSid the peer sent (issue 15 #1).
                await self._services.engine.close(self._gate.call_id)

    # --- the receive loop -----------------------------------------------------------------

    async def _receive_loop(self) -> None:
        """Receive until the call ends; a peer's fault closes this call only, with a reason."""
        watchdog = Watchdog(self._settings.limits)
        try:
            async with watchdog.guard():
                await self._receive_until_done(watchdog)
        except RemoteProtocolError as error:
            # Malformed input (1002) or a broken limit (1008): this call ends, no other.
            log.info("call %s: %s", self._gate.call_id, error)
            self._clock.emit("protocol_error", reason=str(error))
            await self._transport.close(close_code_for(error), str(error))

    async def _receive_until_done(self, watchdog: Watchdog) -> None:
        handled = 0
        while (message := await self._transport.receive()) is not None:
            events = self._codec.receive(message)
            if not events:  # an event the call ignores (Twilio `connected`, unknown types)
                self._control.admit()
            for event in events:
                if not await self._on_codec_event(event, watchdog):
                    return
            handled += 1
            if handled % YIELD_EVERY == 0:
                await asyncio.sleep(0)  # let other calls run between buffered frames
        ended_by_peer = self._transport.peer_close
        if self._parts is not None and ended_by_peer is not None:
            # Vonage, Jambonz, FreeSWITCH and Asterisk hang up by closing the socket, with no
            # stop message: the timeline still says how and when the call ended.
            self._clock.emit("call_ended", reason=ended_by_peer)

    async def _on_codec_event(self, event: CodecEvent, watchdog: Watchdog) -> bool:
        """Handle one provider event; False once the call is over."""
        match event:
            case CallStarted():
                if not await self._start(event):
                    return False
                watchdog.started()
            case AudioReceived(payload=payload, audio_format=audio_format, track=track):
                watchdog.media()
                if track != "inbound":
                    # The far end's track of a both-tracks fork (Twilio <Start><Stream
                    # track="both_tracks">): not the caller, so no caller speech, no barge-in.
                    return True
                duration_ms = len(payload) * 1000 / audio_format.bytes_for_ms(1000)
                if self._pacer.admit(duration_ms):
                    assert self._parts is not None
                    await self._parts.inbound.audio(payload)
            case DtmfReceived(digit=digit):
                self._control.admit()
                self._clock.emit("dtmf", digit=digit)
                assert self._parts is not None
                await self._parts.reactions.apply(bargein.Dtmf(self._clock.now_ms, digit))
            case MarkReached(name=name):
                self._control.admit()
                assert self._parts is not None
                await self._parts.playback.mark_reached(name)
            case ProtocolReply(messages=messages):
                self._control.admit()
                for message in messages:  # e.g. Genesys pong/closed: the protocol wants them now
                    await self._transport.send(message)
            case CallEnded(reason=reason):
                self._clock.emit("call_ended", reason=reason)
                await self._transport.close(CLOSE_NORMAL, "call ended")
                return False
        return True

    async def _start(self, started: CallStarted) -> bool:
        """Take a call slot and open the call; False if the gateway refuses it."""
        refusal = self._gate.started(started) or await self._lease(started)
        if refusal is not None:
            await self._refuse(refusal)
            return False
        self._call_id = started.call_id or started.stream_id
        parts = self._parts = self._open_parts(started)
        await self._sender.send(AcceptCall())
        self.timeline.emit(
            0, "call_started", call_id=self._call_id, metadata=dict(started.metadata)
        )
        if not await self._open_engine(started):
            return False
        assert self._tasks is not None
        self._tasks.create_task(parts.transcripts.run())
        if speaks_first(self._services.engine, self._gate.call_id):
            # The session started: a project that overrides default_session_start (to greet
            # the caller) hears /session_start from its channel, as contract §5.7 says.
            start = bargein.AgentFirst(self._clock.now_ms, SESSION_START_INPUT)
            await parts.reactions.apply(start)
        return True

    def _open_parts(self, started: CallStarted) -> CallParts:
        """The admitted call's media and recogniser (this session closes it), and its parts."""
        wire = self._codec.capabilities.outbound_format
        # Cheap (the VAD model is shared and loaded at startup): no thread hop needed.
        media = self._services.media.open(started.audio_format, wire)
        self._stt = self._services.stt.open(media.sample_rate)
        assert self._tasks is not None
        return CallParts(
            started=started,
            codec=self._codec,
            transport=self._transport,
            services=self._services,
            settings=self._settings,
            call_id=self._gate.call_id,
            provider_id=self._call_id,
            clock=self._clock,
            sender=self._sender,
            tasks=self._tasks,
            media=media,
            stt=self._stt,
        )

    async def _open_engine(self, started: CallStarted) -> bool:
        """Open the engine's session for the call; False (and refused) if its store failed."""
        info = CallInfo(self._gate.call_id, self._call_id, metadata=started.metadata)
        try:
            await self._services.engine.open(info)
        except StoreError as error:
            # The store could not claim or load the call: nothing started, the provider may
            # try again later (docs/redis.md, "When Redis is down or slow").
            log.warning("call %s: store unavailable: %s", self._call_id, error)
            await self._refuse(Refusal(CLOSE_TRY_AGAIN_LATER, f"store unavailable: {error}"))
            return False
        self._engine_open = True
        return True

    async def _refuse(self, refusal: Refusal) -> None:
        """Turn the call away at its start: the hang-up (the browser's `stop`), the close."""
        self.timeline.emit(0, "call_refused", code=refusal.code, reason=refusal.reason)
        with contextlib.suppress(LocalProtocolError):
            await self._sender.send(Hangup(refusal.reason))
        await self._transport.close(refusal.code, refusal.reason)

    async def _lease(self, started: CallStarted) -> Refusal | None:
        """Take the call's lease across nodes, when the deployment shares a registry."""
        leases = self._services.leases
        if leases is None:
            return None
        provider_id = started.call_id or started.stream_id
        refusal = await leases.acquire(provider_id)
        if refusal is None:
            self._leased = provider_id
        return refusal

    def _record_pacing(self) -> None:
        """One record for all audio dropped by pacing, not one per message."""
        if self._pacer.dropped_messages:
            self._clock.emit(
                "media_dropped",
                dropped_ms=round(self._pacer.dropped_ms),
                messages=self._pacer.dropped_messages,
            )

    async def _shutdown(self) -> None:
        """Stop the turn and the recogniser so the task group can finish."""
        if self._parts is not None:
            self._parts.stop()
        if self._stt is not None:
            await self._stt.aclose()
        if self._call_id:
            with contextlib.suppress(LocalProtocolError):
                await self._sender.send(Hangup("call over"))

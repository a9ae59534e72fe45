"""One Twilio ConversationRelay call: Twilio's transcripts in, the engine's sentences out as text.

Twilio recognises and speaks (providers.md §b.2), so there is no audio, VAD or playout here:
a final ``prompt`` starts a turn (turns never overlap: a new one waits for the previous one),
each ``Say`` goes out as a ``text`` token as soon as the engine streams it, and the reply ends
with an empty token marked ``last``. An ``interrupt`` is the caller talking over the bot:
Twilio already stopped its speech (its own flush); the running turn is cancelled exactly as a
confirmed VAD barge-in cancels it in ``CallSession`` (``CancelledError`` at the tool's await,
design §4), and the engine hears ``utteranceUntilInterrupt``. A reply that was never
interrupted counts as heard in full once the caller speaks again (or the call ends): Twilio
sends no playback acknowledgements, so that is the best the gateway can know.

The timeline's clock is the wall clock since the call opened (ms; times
``limits.media_max_speed``, which a fast replay raises): there are no media frames.
When the engine ends or transfers the call (``EndCall``), the session sends ``end`` after the
reply's last token, with ``handoffData`` that voicegate's ``<Connect action>`` answers with a
``<Dial>`` (transfer) or a ``<Hangup/>`` (gateway/conversationrelay_twiml.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from voicegate.codecs import CallStarted, DtmfReceived, Hangup
from voicegate.codecs import Event as CodecEvent
from voicegate.codecs.conversationrelay import ConversationRelayCodec
from voicegate.codecs.events import PlaybackInterrupted, ProviderError, TranscriptReceived
from voicegate.engine.seam import (
    SESSION_START_INPUT,
    CallInfo,
    EndCall,
    Say,
    TurnEnded,
    TurnEvent,
    UserInput,
    event_record,
    speaks_first,
)
from voicegate.engine.seam import Dtmf as DtmfInput
from voicegate.engine.seam import Transcript as TranscriptInput
from voicegate.errors import LocalProtocolError, PolicyViolationError, RemoteProtocolError
from voicegate.gateway.call_ending import hang_up
from voicegate.gateway.pacing import ControlPacer
from voicegate.gateway.timeline import Timeline
from voicegate.gateway.transport import CallGate, Transport, close_code_for
from voicegate.gateway.watchdog import Watchdog

if TYPE_CHECKING:  # session.py imports this module to run ConversationRelay calls
    from voicegate.gateway.session import CallServices, SessionSettings

log = logging.getLogger(__name__)


#: Turns that may wait behind the running one (each prompt or DTMF starts one).
MAX_QUEUED_TURNS = 8


class RelaySession:
    """Runs one ConversationRelay call from ``setup`` to its end."""

    def __init__(
        self,
        transport: Transport,
        codec: ConversationRelayCodec,
        services: CallServices,
        settings: SessionSettings,
        gate: CallGate,
    ) -> None:
        self._transport = transport
        self._codec = codec
        self._services = services
        self._settings = settings
        self._gate = gate
        limits = settings.limits
        observers = () if services.observer is None else (services.observer(),)
        self.timeline = Timeline(
            listeners=(gate.record, *observers),
            max_records=limits.timeline_max_records,
            max_chars=limits.timeline_max_chars,
        )
        self._opened = asyncio.get_running_loop().time()
        self._call_id = ""
        self._engine_open = False
        self._tasks: asyncio.TaskGroup | None = None
        self._turn: asyncio.Task[None] | None = None  # the latest turn (it runs after the others)
        self._turns: list[asyncio.Task[None]] = []  # every turn not yet done, oldest first
        self._control = ControlPacer(limits, asyncio.get_running_loop().time)
        self._turn_id = ""
        self._sent: list[str] = []  # the running (or last) turn's sentences sent as tokens
        self._unheard: tuple[str, str] | None = None  # (turn id, text) not yet reported heard
        self._watchdog: Watchdog | None = None

    @property
    def call_id(self) -> str:
        """Twilio's CallSid, once ``setup`` came (and was admitted)."""
        return self._call_id

    @property
    def _now_ms(self) -> int:
        # No media frames count time here: the wall clock since the call opened, sped up as
        # far as the gateway lets a peer's clock run ahead (limits.media_max_speed; 1 in
        # production), so a fast replay's timeline lines up with its caller's media clock.
        elapsed = asyncio.get_running_loop().time() - self._opened
        return round(elapsed * 1000 * self._settings.limits.media_max_speed)

    async def run(self) -> None:
        """Serve the call until Twilio closes it, the engine ends it or a limit is broken."""
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                try:
                    await self._receive_loop()
                finally:
                    await self._shutdown()
        finally:
            if self._engine_open:
                await self._services.engine.close(self._gate.call_id)

    # --- inbound ------------------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        watchdog = self._watchdog = Watchdog(self._settings.limits)
        try:
            async with watchdog.guard():
                while (message := await self._transport.receive()) is not None:
                    watchdog.media()  # any message: a text call has no audio to count
                    self._control.admit()  # every message here is text: prompts, DTMF, ...
                    for event in self._codec.receive(message):
                        if not await self._on_event(event, watchdog):
                            return
        except RemoteProtocolError as error:
            log.info("call %s: %s", self._gate.call_id, error)
            self.timeline.emit(self._now_ms, "protocol_error", reason=str(error))
            await self._transport.close(close_code_for(error), str(error))

    async def _on_event(self, event: CodecEvent, watchdog: Watchdog) -> bool:
        """Handle one event from Twilio; False once the call is over."""
        match event:
            case CallStarted():
                if not await self._start(event):
                    return False
                watchdog.started()
            case TranscriptReceived(text=text, final=final):
                self.timeline.emit(self._now_ms, "transcript", text=text, final=final)
                if final and text.strip():
                    self._start_turn(TranscriptInput(text))
            case PlaybackInterrupted(heard=heard, duration_ms=duration_ms):
                await self._interrupt(heard, duration_ms)
            case DtmfReceived(digit=digit):
                self.timeline.emit(self._now_ms, "dtmf", digit=digit)
                self._start_turn(DtmfInput(digit))
            case ProviderError(description=description):
                log.warning("call %s: twilio reports: %s", self._call_id, description)
                self.timeline.emit(self._now_ms, "provider_error", description=description)
        return True

    async def _start(self, started: CallStarted) -> bool:
        refusal = self._gate.started(started)
        if refusal is not None:
            self.timeline.emit(0, "call_refused", code=refusal.code, reason=refusal.reason)
            await self._transport.close(refusal.code, refusal.reason)
            return False
        self._call_id = started.call_id
        self.timeline.emit(
            self._now_ms, "call_started", call_id=self._call_id, metadata=dict(started.metadata)
        )
        info = CallInfo(self._gate.call_id, self._call_id, metadata=started.metadata)
        await self._services.engine.open(info)
        self._engine_open = True
        if speaks_first(self._services.engine, self._gate.call_id):
            # The session started: an overridden default_session_start greets (§5.7).
            self._start_turn(TranscriptInput(SESSION_START_INPUT))
        return True

    async def _interrupt(self, heard: str, duration_ms: int | None) -> None:
        """The caller talked over the bot: Twilio stopped speaking; cancel, report heard."""
        now_ms = self._now_ms  # Twilio detected the speech; its onset is not on the wire
        self.timeline.emit(
            now_ms,
            "interruption",
            reason="interrupt",
            onset_ms=now_ms,
            heard=heard,
            duration_ms=duration_ms,
        )
        # Twilio's own flush: its speech already stopped when this message was sent. One
        # instant, one stamp: a second clock read could cross a millisecond.
        self.timeline.emit(now_ms, "flush_sent", verb=self._codec.capabilities.flush_verb)
        turn, turn_id = self._turn, self._turn_id
        if turn is not None and not turn.done():
            turn.cancel()
            self.timeline.emit(now_ms, "turn_cancelled", turn_id=turn_id)
        if self._unheard is not None:  # the running turn, or the reply Twilio was speaking
            await self._report_heard(heard, interrupted=True)

    # --- turns --------------------------------------------------------------------------------

    def _start_turn(self, user: UserInput) -> None:
        assert self._tasks is not None
        self._turns = [turn for turn in self._turns if not turn.done()]
        if len(self._turns) > MAX_QUEUED_TURNS:
            # Each prompt waits for the turn before it; a caller cannot say this many
            # sentences while the bot answers one, and an unbounded queue kept a worker busy
            # long after the peer hung up.
            raise PolicyViolationError(
                f"more than {MAX_QUEUED_TURNS} prompts wait for the bot to answer the first"
            )
        previous = self._turn
        self._turn = self._tasks.create_task(self._run_turn(user, previous))
        self._turns.append(self._turn)

    async def _run_turn(self, user: UserInput, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.wait([previous])  # a cancelled turn may still be unwinding its tool
        if self._unheard is not None:  # the caller spoke again: the last reply was heard
            await self._report_heard(self._unheard[1], interrupted=False)
        stream = self._services.engine.turn(self._gate.call_id, user)
        ending: EndCall | None = None
        try:
            async with stream:
                self._turn_id, self._sent = stream.turn_id, []
                self._unheard = (stream.turn_id, "")
                self.timeline.emit(
                    self._now_ms, "turn_started", turn_id=stream.turn_id, input=input_fields(user)
                )
                async for event in stream:
                    ending = await self._on_turn_event(event) or ending
        except asyncio.CancelledError:
            for event in stream.undelivered():
                if not isinstance(event, Say):
                    self.timeline.emit(self._now_ms, **event_fields(event))
            raise
        await self._send_text("", last=True)  # the reply is complete
        self._unheard = (stream.turn_id, " ".join(self._sent))
        if ending is not None:
            await self._end_call(ending.transfer_to)

    async def _on_turn_event(self, event: TurnEvent) -> EndCall | None:
        self.timeline.emit(self._now_ms, **event_fields(event))
        match event:
            case Say(text=text):
                await self._send_text(text + " ", last=False)
                self._sent.append(text)
            case EndCall():
                return event
            case TurnEnded(reason="error", detail=detail):
                log.warning("call %s turn %s failed: %s", self._call_id, event.turn_id, detail)
                if self._settings.error_response:
                    await self._send_text(self._settings.error_response + " ", last=False)
                    self._sent.append(self._settings.error_response)
        return None

    async def _report_heard(self, text: str, *, interrupted: bool) -> None:
        assert self._unheard is not None
        turn_id, self._unheard = self._unheard[0], None
        # Twilio says what was heard only when it was interrupted; a whole reply is assumed.
        estimated = {} if interrupted else {"estimated": True}
        self.timeline.emit(
            self._now_ms,
            "heard",
            turn_id=turn_id,
            text=text,
            interrupted=interrupted,
            **estimated,
        )
        await self._services.engine.heard(self._gate.call_id, turn_id, text, interrupted)

    # --- outbound -----------------------------------------------------------------------------

    async def _send_text(self, token: str, *, last: bool) -> None:
        if self._watchdog is not None:
            self._watchdog.media()  # the bot talking is activity too
        await self._transport.send(self._codec.text(token, last=last))

    async def _end_call(self, transfer_to: str) -> None:
        """``end`` with handoff data, then close: the engine ended or transferred the call."""
        await hang_up(
            transfer_to,
            codec=self._codec,
            transport=self._transport,
            emit=lambda event, **fields: self.timeline.emit(self._now_ms, event, **fields),
        )

    async def _shutdown(self) -> None:
        """Stop the turns; a finished reply counts as heard, one cut short as not heard."""
        running = self._turn is not None and not self._turn.done()
        pending = [turn for turn in self._turns if not turn.done()]
        for turn in pending:  # the queued ones too: nobody is left to answer
            turn.cancel()
        if pending:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(pending)
        if self._unheard is not None and self._engine_open:
            await self._report_heard(self._unheard[1], interrupted=running)
        if self._call_id:
            with contextlib.suppress(LocalProtocolError):
                for message in self._codec.send(Hangup("call over")):
                    await self._transport.send(message)


def input_fields(user: UserInput) -> dict[str, str]:
    """A user input as the ``turn_started`` record's ``input``."""
    match user:
        case DtmfInput(digits=digits):
            return {"dtmf": digits}
        case TranscriptInput(text=text):
            return {"text": text}
    return {"kind": type(user).__name__}


def event_fields(event: TurnEvent) -> dict[str, Any]:
    """A turn event as timeline fields (``event`` plus the record's keys)."""
    record = event_record(event)
    return {"event": record.pop("event"), **record}

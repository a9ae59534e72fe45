"""The dialogue hand-off: the engine's turns run as tasks, their events become speech.

Design §4: the gateway talks to the engine only through the streaming turn interface. Each
turn is one task in the call's task group; a new turn waits for the previous one (a cancelled
turn may still be unwinding its tool), so turns never overlap. The turn's ``Say`` events are
spoken as they stream, an ``EndCall`` is handed to the call's ending, a failed turn or a failed
synthesiser is answered with the configured apology and the call goes on (issues 7 and 18).
Cancelling the current task is the whole barge-in contract on this side: ``CancelledError``
reaches the tool at its ``await``. A speculative turn (issue 14) runs here too, but its events
are held on its ``Speculation`` until ``session/speculator.py`` confirms it.
"""

from __future__ import annotations

import asyncio
import logging

from voicegate.engine.seam import DialogueEngine, EndCall, Say, TurnEnded, TurnEvent, UserInput
from voicegate.errors import SpeechError
from voicegate.gateway import bargein
from voicegate.gateway.relay_session import event_fields, input_fields
from voicegate.gateway.session.clock import CallClock
from voicegate.gateway.session.ending import CallEnding
from voicegate.gateway.session.heard import HeardReporter
from voicegate.gateway.session.outbound import Apply, Speaker
from voicegate.gateway.session.settings import SessionSettings
from voicegate.gateway.speculation import Speculation

log = logging.getLogger(__name__)


class TurnRunner:
    """Runs the engine's turns for one call, one task at a time, and speaks what they say."""

    def __init__(
        self,
        *,
        clock: CallClock,
        engine: DialogueEngine,
        call_id: str,
        log_id: str,
        settings: SessionSettings,
        tasks: asyncio.TaskGroup,
        speaker: Speaker,
        heard: HeardReporter,
        ending: CallEnding,
        apply: Apply,
    ) -> None:
        self._clock = clock
        self._engine = engine
        # The gateway's own id keys the engine; the provider's is the one in the logs.
        self._call_id = call_id
        self._log_id = log_id
        self._settings = settings
        self._tasks = tasks
        self._speaker = speaker
        self._heard = heard
        self._ending = ending
        self._apply = apply
        self._turn: asyncio.Task[None] | None = None
        # The latest turn task of either kind: the next one waits for it (turns never overlap).
        self._last_task: asyncio.Task[None] | None = None
        self._turn_id = ""

    def start(self, user: UserInput, epoch: int, speculation: Speculation | None = None) -> None:
        """Start a turn for this input, after the previous one; speculative if ``speculation``."""
        previous = self._last_task
        task = self._tasks.create_task(self._run(user, epoch, previous, speculation))
        self._last_task = task
        if speculation is None:
            self._turn = task
        else:
            speculation.task = task

    def interrupt(self) -> str:
        """Cancel the current turn (the caller barged in); the id of the turn it was."""
        turn, turn_id = self._turn, self._turn_id
        if turn is not None and not turn.done():
            turn.cancel()
            self._clock.emit("turn_cancelled", turn_id=turn_id)
        return turn_id

    def stop(self) -> None:
        """The call is over: cancel the current turn, if it still runs."""
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()

    def adopt(self, speculation: Speculation) -> None:
        """A confirmed speculative turn is now the current turn."""
        self._turn = speculation.task

    async def confirm(self, turn_id: str) -> None:
        """Tell the engine its speculative turn was the right one; it is now current."""
        self._turn_id = turn_id
        await self._engine.confirm(self._call_id, turn_id)

    async def finish(self, turn_id: str) -> None:
        """The turn is over: report what was heard, tell the machine, end the call if asked."""
        await self._heard.turn_closed(turn_id)
        await self._apply(bargein.TurnEnded(self._clock.now_ms))
        await self._ending.turn_finished(turn_id)

    async def failed(self, ended: TurnEnded, epoch: int) -> None:
        """Log the cause and say the configured response; the call goes on."""
        log.warning("call %s turn %s failed: %s", self._log_id, ended.turn_id, ended.detail)
        if self._settings.error_response:
            await self._apologise(ended.turn_id, epoch, self._settings.error_response)

    async def _run(
        self,
        user: UserInput,
        epoch: int,
        previous: asyncio.Task[None] | None,
        speculation: Speculation | None = None,
    ) -> None:
        if previous is not None:
            # A cancelled turn may still be unwinding its tool; turns never overlap.
            await asyncio.wait([previous])
        stream = self._engine.turn(self._call_id, user)
        try:
            async with stream:
                # An engine on the dialogue plane names the turn once it has started there.
                self._clock.emit("turn_started", turn_id=stream.turn_id, input=input_fields(user))
                if speculation is None:
                    self._turn_id = stream.turn_id
                else:
                    await self._speculation_named(speculation, stream.turn_id)
                async for event in stream:
                    if speculation is None or not await self._hold(event, speculation, epoch):
                        await self._on_event(event, epoch)
        except asyncio.CancelledError:
            self._record_undelivered(stream.undelivered())
            raise
        except SpeechError as error:
            # The synthesiser failed: leaving the block closed the stream, which ended the
            # turn; the caller hears an apology and the call goes on (issue 7).
            log.warning("call %s turn %s: speech failed: %s", self._log_id, stream.turn_id, error)
            self._record_undelivered(stream.undelivered())
            self._clock.emit(
                "speech_error",
                turn_id=stream.turn_id,
                engine="tts",
                reason=str(error),
            )
            await self._apologise(stream.turn_id, epoch)
        if speculation is not None and not speculation.confirmed:
            speculation.finished = True  # finished once confirmed (Speculator._release_held)
            return
        await self.finish(stream.turn_id)

    async def _speculation_named(self, speculation: Speculation, turn_id: str) -> None:
        speculation.turn_id = turn_id
        if speculation.confirmed:
            await self.confirm(turn_id)

    async def _hold(self, event: TurnEvent, speculation: Speculation, epoch: int) -> bool:
        """Hold an unconfirmed turn's event (speech synthesised now); False once confirmed."""
        if speculation.confirmed:
            return False
        segment = None
        if isinstance(event, Say):
            segment = await self._speaker.segment(event, epoch)
            if speculation.confirmed:  # confirmed while this was synthesised: play it now
                self._clock.emit(**event_fields(event))
                await self._speaker.play(segment)
                return True
        speculation.held.append((event, segment))
        return True

    async def _on_event(self, event: TurnEvent, epoch: int) -> None:
        self._clock.emit(**event_fields(event))
        if isinstance(event, Say):
            await self._speaker.speak(event, epoch)
        elif isinstance(event, EndCall):
            self._ending.asked(event)
        elif isinstance(event, TurnEnded) and event.reason == "error":
            await self.failed(event, epoch)

    async def _apologise(self, turn_id: str, epoch: int, text: str | None = None) -> None:
        apology = Say(turn_id, self._settings.apology if text is None else text, "model")
        self._clock.emit("say", turn_id=turn_id, text=apology.text, source="gateway")
        try:
            await self._speaker.speak(apology, epoch)
        except SpeechError as error:
            log.warning("call %s: the apology could not be spoken either: %s", self._log_id, error)

    def _record_undelivered(self, events: tuple[TurnEvent, ...]) -> None:
        for event in events:
            if not isinstance(event, Say):
                self._clock.emit(**event_fields(event))

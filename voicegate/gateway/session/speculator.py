"""Speculative turns on the gateway's side (issue 14; docs/turn-taking.md): start, confirm, drop.

At a held pause whose words are already transcribed, the turn those words call for can start
before the caller's turn has ended (preemptive generation). This module owns the call's one
speculative turn: it starts it through the turn runner with a ``Speculation`` that holds its
speech and events; it confirms it when the final transcript says the same words (the held
audio then goes to playout at once, in order); and it drops it, with nothing played or
reported heard, when the caller goes on or the final differs. The ``Speculation`` record and
the word comparison are in ``gateway/speculation.py``; only the decisions are here.
"""

from __future__ import annotations

from collections.abc import Callable

from voicegate.engine.seam import Transcript as TranscriptInput
from voicegate.engine.seam import TurnEnded
from voicegate.gateway import bargein
from voicegate.gateway.relay_session import event_fields
from voicegate.gateway.session.clock import CallClock
from voicegate.gateway.session.outbound import Playback
from voicegate.gateway.session.turn_runner import TurnRunner
from voicegate.gateway.speculation import Speculation, same_words
from voicegate.turns.tracker import TurnTracker


class Speculator:
    """The call's speculative turn, if any: started at a pause, confirmed or dropped."""

    def __init__(
        self,
        clock: CallClock,
        machine: Callable[[], bargein.BargeInState],
        runner: TurnRunner,
        playback: Playback,
    ) -> None:
        self._clock = clock
        self._machine = machine
        self._runner = runner
        self._playback = playback
        self._speculation: Speculation | None = None

    def speculate(self, turns: TurnTracker) -> None:
        """At a held pause whose words are in, start the turn they call for, held."""
        state = self._machine()
        if self._speculation is not None or state.turn_running:
            return
        if state.phase is not bargein.Phase.USER_SPEAKING:
            return
        text = turns.speculation_text()
        if text is None:
            return
        self._speculation = Speculation(text)
        self._clock.emit("speculation_started", text=text)
        user = TranscriptInput(text, speculative=True)
        self._runner.start(user, self._machine().epoch, self._speculation)

    def drop(self, reason: str) -> None:
        """Void the speculative turn, if there is one: it is cancelled, nothing of it played."""
        speculation, self._speculation = self._speculation, None
        if speculation is None:
            return
        if speculation.task is not None:
            speculation.task.cancel()  # the engine rewinds it: no trace (engine/loop/speculation)
        self._clock.emit("speculation_cancelled", reason=reason)

    async def adopt(self, text: str, dtmf: str) -> bool:
        """The turn ended: confirm the speculative turn if it guessed these words."""
        speculation = self._speculation
        if speculation is None:
            return False
        if dtmf or not same_words(speculation.text, text):
            self.drop("the final transcript differs")
            return False
        self._speculation = None
        speculation.confirmed = True
        self._runner.adopt(speculation)
        self._clock.emit("speculation_confirmed", held=len(speculation.held))
        if speculation.turn_id:  # else it is confirmed as soon as the engine names it
            await self._runner.confirm(speculation.turn_id)
        await self._release_held(speculation)
        return True

    async def _release_held(self, speculation: Speculation) -> None:
        """Play what the confirmed turn held, in order, as if it had just been produced."""
        failed = None
        for event, segment in speculation.held:
            self._clock.emit(**event_fields(event))
            if segment is not None:
                self._playback.enqueue(segment)
            elif isinstance(event, TurnEnded) and event.reason == "error":
                failed = event
        speculation.held.clear()
        await self._playback.release()
        if failed is not None:
            await self._runner.failed(failed, self._machine().epoch)
        if speculation.finished:
            await self._runner.finish(speculation.turn_id)

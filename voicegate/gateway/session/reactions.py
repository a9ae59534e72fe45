"""The barge-in reactions: the pure machine of gateway/bargein.py stepped, its actions done.

Design §5 and the §2 picture: ``bargein.step`` decides, and this module is the one place that
carries the decisions out on the call's parts. ``StartTurn`` starts a turn (or confirms the
speculative one that guessed it); ``PausePlayout`` stops the bot at the caller, flushing the
provider when the policy says so; ``ResumePlayout`` plays on after a false alarm; and
``CancelTurn`` is the confirmed interruption: the ending is dropped, the turn task cancelled
(``CancelledError`` at the tool's await), every older epoch's audio flushed with the
provider's own verb, and the engine told what the caller heard. Every part that observes an
event (inbound speech, transcripts, DTMF, playout, a finished turn) steps the machine
through :meth:`BargeInReactions.apply`, so the state has one owner.
"""

from __future__ import annotations

from voicegate.engine.seam import Dtmf as DtmfInput
from voicegate.engine.seam import Transcript as TranscriptInput
from voicegate.engine.seam import UserInput
from voicegate.gateway import bargein
from voicegate.gateway.ledger import TurnHeard
from voicegate.gateway.session.clock import CallClock
from voicegate.gateway.session.ending import CallEnding
from voicegate.gateway.session.heard import HeardReporter
from voicegate.gateway.session.outbound import Playback
from voicegate.gateway.session.speculator import Speculator
from voicegate.gateway.session.turn_runner import TurnRunner


class BargeInReactions:
    """The call's barge-in machine: its state, stepped by events, and its actions executed."""

    def __init__(
        self,
        *,
        clock: CallClock,
        policy: bargein.BargeInPolicy,
        playback: Playback,
        runner: TurnRunner,
        speculator: Speculator,
        heard: HeardReporter,
        ending: CallEnding,
    ) -> None:
        self.state = bargein.BargeInState()
        self._clock = clock
        self._policy = policy
        self._playback = playback
        self._runner = runner
        self._speculator = speculator
        self._heard = heard
        self._ending = ending

    async def apply(self, event: bargein.Event) -> None:
        """Step the machine with one event and carry out its actions, in order."""
        self.state, actions = bargein.step(self.state, event, self._policy)
        for action in actions:
            await self._execute(action)

    async def _execute(self, action: bargein.Action) -> None:
        match action:
            case bargein.StartTurn(text=text, dtmf=dtmf):
                if await self._speculator.adopt(text, dtmf):
                    return
                user: UserInput = DtmfInput(dtmf) if dtmf else TranscriptInput(text)
                self._runner.start(user, self.state.epoch)
            case bargein.CancelTurn():
                await self._interrupt(action)
            case bargein.PausePlayout(flush=flush):
                await self._playback.pause(flush)
            case bargein.ResumePlayout():
                await self._playback.resume()

    async def _interrupt(self, cancel: bargein.CancelTurn) -> None:
        self._clock.emit(
            "interruption",
            reason=cancel.reason,
            onset_ms=cancel.onset_ms,
            epoch=cancel.epoch,
        )
        self._ending.drop()  # the caller cut into the goodbye: they have more to say
        turn_id = self._runner.interrupt()
        heard = await self._playback.flush(cancel.epoch)
        reported = {h.turn_id for h in heard}
        for settled in heard:
            await self._heard.report(settled)
        if turn_id and turn_id not in reported:
            await self._heard.report(TurnHeard(turn_id, "", interrupted=True))

"""A call the engine ended (issue 16): hung up only once the caller heard the goodbye.

The engine ends or transfers a call with an ``EndCall`` event in the middle of a turn. The
call must not end there: the turn may still speak, and the provider still holds audio. So
the ending waits for two things, in either order: the turn is over, and playout is idle
(every mark of the last utterance came back). Then ``gateway/call_ending.py`` hangs up or
transfers through the provider. A barge-in into the goodbye drops the ending: the caller has
more to say. This small state machine is kept apart so that neither the turn runner nor
playback needs to know what the other is waiting for.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from voicegate.engine.seam import EndCall
from voicegate.gateway.playout import Playout

#: Hangs up (``""``) or transfers (a destination) the call, through the provider.
HangUp = Callable[[str], Awaitable[None]]


class CallEnding:
    """The engine's ``EndCall``, carried out once its turn is over and all was heard."""

    def __init__(self, playout: Playout, hang_up: HangUp) -> None:
        self._playout = playout
        self._hang_up = hang_up
        self._ending: EndCall | None = None
        self._turn_over = False

    def asked(self, ending: EndCall) -> None:
        """The engine ended the call in the turn it names."""
        self._ending, self._turn_over = ending, False

    def drop(self) -> None:
        """The caller cut into the goodbye: they have more to say."""
        self._ending = None

    async def turn_finished(self, turn_id: str) -> None:
        """A turn is over: if it was the one that ended the call, end it once heard."""
        if self._ending is not None and self._ending.turn_id == turn_id:
            self._turn_over = True
            await self.when_heard()

    async def when_heard(self) -> None:
        """End the call the engine ended, once the last utterance was heard (all marks back).

        Rasa's Twilio Media Streams channel does the same: hang up after the last mark
        (shared/spec/providers.md §b.1); hanging up earlier would cut the goodbye short.
        """
        ending = self._ending
        if ending is None or not self._turn_over:
            return
        if not self._playout.idle:
            return  # a later mark (or flush) calls again
        self._ending = None
        await self._hang_up(ending.transfer_to)

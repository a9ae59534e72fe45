"""What the caller heard of each turn, told to the engine and put on the timeline.

Design §4 rule 5: the conversation history holds only what the caller heard. The playout
ledger works that out from the provider's marks (or estimates it from the playout clock when
the provider sends no acknowledgements); this module is the one place that passes it across
the seam with ``DialogueEngine.heard``, and marks the record ``estimated`` when it is a guess.
Playback (a turn's last mark), the turn runner (a finished turn) and the barge-in reactions
(an interrupted one) all report through it.
"""

from __future__ import annotations

from voicegate.codecs import Codec
from voicegate.engine.seam import DialogueEngine
from voicegate.gateway.ledger import PlayoutLedger, TurnHeard
from voicegate.gateway.session.clock import CallClock


class HeardReporter:
    """Reports what the caller heard of a turn, keyed by the gateway's own call id."""

    def __init__(
        self,
        clock: CallClock,
        engine: DialogueEngine,
        call_id: str,
        codec: Codec,
        ledger: PlayoutLedger,
    ) -> None:
        self._clock = clock
        self._engine = engine
        self._call_id = call_id
        self._codec = codec
        self._ledger = ledger

    async def turn_closed(self, turn_id: str) -> None:
        """A turn is over: report what it was heard saying, if all of it has been played."""
        heard = self._ledger.close_turn(turn_id)
        if heard is not None:
            await self.report(heard)

    async def report(self, heard: TurnHeard) -> None:
        """Put what the caller heard on the timeline and tell the engine."""
        # Without playback acknowledgements what was heard is the playout clock's estimate.
        estimated = {} if self._codec.capabilities.playback_acks else {"estimated": True}
        self._clock.emit(
            "heard",
            turn_id=heard.turn_id,
            text=heard.text,
            interrupted=heard.interrupted,
            **estimated,
        )
        await self._engine.heard(self._call_id, heard.turn_id, heard.text, heard.interrupted)

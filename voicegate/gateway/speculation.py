"""A speculative turn on the gateway's side: started at the caller's pause, heard only if the
pause was the end of the turn (issue 14, preemptive generation; docs/turn-taking.md).

The engine runs the turn as far as it can without an effect (engine/loop/speculation.py);
here its speech is synthesised as it comes and held, with its other events, until the turn
it guessed is confirmed: the final transcript says the same words. Then the held audio goes
to playout at once. If the caller goes on, or the final differs, the turn is cancelled and
nothing of it is played, reported heard or shown but the ``speculation_*`` records.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

from voicegate.engine.seam import TurnEvent
from voicegate.gateway.playout import QueuedSegment

_WORD = re.compile(r"[\w']+")


@dataclass(eq=False)
class Speculation:
    """One speculative turn and what it produced before it was confirmed."""

    text: str
    task: asyncio.Task[None] | None = None
    turn_id: str = ""
    confirmed: bool = False
    #: The stream ended before the confirmation: the turn is finished once confirmed.
    finished: bool = False
    #: Each event in order; a ``Say`` with its synthesised audio.
    held: list[tuple[TurnEvent, QueuedSegment | None]] = field(default_factory=list)


def same_words(guessed: str, final: str) -> bool:
    """Whether the final transcript says what the speculative turn answered (case, punctuation
    and spacing aside): anything else is a material difference."""
    return _WORD.findall(guessed.lower()) == _WORD.findall(final.lower())

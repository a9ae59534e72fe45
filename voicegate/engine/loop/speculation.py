"""Speculative turns (issue 14, preemptive generation): start early, change nothing until told.

The gateway may start a turn on the transcript of a caller's first pause, before it knows the
caller has finished, so the answer is ready when the turn ends. Such a turn runs until its
first step with an effect (an ordered-block step, any tool call but one marked ``run_early``)
and waits there (``TurnChannel.go_ahead``) for :meth:`ProjectEngine.confirm`; it also waits
before it finishes. What it did up to then lives only in the session's memory of the dialogue
(the history, the dialogue state, the model's place in a script), never in the memory store:
so when the caller goes on and the gateway cancels it, putting those back leaves no trace.
A confirmed turn is an ordinary turn, cancellation contract and all (design §4).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from voicegate.engine.history import EventHistory
from voicegate.engine.llm.port import Rewindable
from voicegate.engine.loop.messages import Conversation
from voicegate.engine.loop.session import Session
from voicegate.engine.loop.snapshot import Snapshot, dumps, loads
from voicegate.engine.loop.stream import TurnChannel


@dataclass(frozen=True, slots=True)
class Saved:
    """The session as it was before a speculative turn started."""

    state: str
    llm: object | None
    resume_line: str | None


def save(session: Session) -> Saved:
    """What :func:`rewind` needs (the snapshot resumed calls use, issue 13)."""
    snapshot = Snapshot(session.dialogue, session.history.snapshot(), session.turns_started)
    llm = session.llm.mark() if isinstance(session.llm, Rewindable) else None
    return Saved(dumps(snapshot), llm, session.resume_line)


def rewind(session: Session, saved: Saved, turn_id: str) -> None:
    """Put the session back as :func:`save` found it: the turn never happened."""
    snapshot = loads(saved.state)
    session.dialogue = snapshot.dialogue
    session.history = EventHistory()
    for event in snapshot.history:
        session.history.append(event)
    session.conversation = Conversation()  # its cache converted the events now gone
    session.turn_ids.discard(turn_id)
    session.resume_line = saved.resume_line
    if isinstance(session.llm, Rewindable):
        session.llm.rewind(saved.llm)


async def speculative_turn(
    session: Session,
    hold: asyncio.Event,
    body: Callable[[TurnChannel], Awaitable[None]],
    channel: TurnChannel,
) -> None:
    """Run ``body`` as a speculative turn: rewound if cancelled before ``hold`` is set."""
    saved = save(session)
    try:
        await body(channel)
        await hold.wait()  # not over before it is confirmed: until then it can be undone
    except asyncio.CancelledError:
        if not hold.is_set():
            rewind(session, saved, channel.turn_id)
        raise
    finally:
        session.holds.pop(channel.turn_id, None)

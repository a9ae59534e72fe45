"""A call that survives the loss of its node: checkpoints, resume and fencing (issue 13).

The engine saves a call's dialogue state (``snapshot.py``) in a :class:`CallStateStore` at
the points where a cancellation would leave it: when a tool starts (its step is pending),
when a tool finished, when the turn ends or is closed, and after ``heard``. A node that opens
a call whose state is in the store resumes it: the turn that was running on the lost node is
treated as cancelled (the step stays pending, memory written through is kept, design §4) and
the first turn says the configured resume line.

Fencing: opening a call *claims* it, which bumps the call's epoch in the store; a save carries
the epoch of its claim and is refused once another node claimed the call (``StaleCallError``),
so a stale node that comes back cannot write over the newer node's state. The call's memory
writes carry the epoch too (:class:`FencedMemory`): the check and the write are one atomic
step in the store (a Lua script on Redis, one statement on SQLite).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self

from voicegate.engine.history import EventHistory
from voicegate.engine.loop.session import Session
from voicegate.engine.loop.snapshot import Snapshot, dumps, loads
from voicegate.engine.loop.stream import TurnChannel, TurnStream
from voicegate.engine.loop.turn_runner import run_turn
from voicegate.engine.memory.store import InMemoryStore, MemoryStore
from voicegate.engine.seam import (
    SESSION_START_INPUT,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    UserInput,
    user_text,
)
from voicegate.errors import StaleCallError


class CallStateStore(Protocol):
    """Per-call resumable state with an epoch per call (Redis, SQLite, or in memory)."""

    def claim(self, call_id: str) -> tuple[int, str | None]:
        """Take the call over: a new epoch, and the state saved under an earlier one."""
        ...

    def save_state(self, call_id: str, epoch: int, state_json: str) -> None:
        """Save unless another claim came since (then raise ``StaleCallError``)."""
        ...

    def save_memory(
        self,
        call_id: str,
        epoch: int,
        conversation_id: str,
        namespace: str,
        entry: str,
        json_value: str,
    ) -> None:
        """Store one memory value, in the same check as :meth:`save_state`, atomically."""
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


@dataclass(frozen=True, slots=True)
class ResumeOptions:
    """Where calls' states are kept, and what a resumed call hears first."""

    store: CallStateStore
    line: str = "Sorry, we were cut off."


class InMemoryCallStates:
    """A ``CallStateStore`` in a dict, its fenced memory writes into ``memory`` (tests)."""

    def __init__(self, memory: InMemoryStore | None = None) -> None:
        self._calls: dict[str, tuple[int, str | None]] = {}
        self.memory = InMemoryStore() if memory is None else memory

    def claim(self, call_id: str) -> tuple[int, str | None]:
        """A new epoch and the saved state."""
        epoch, state = self._calls.get(call_id, (0, None))
        self._calls[call_id] = (epoch + 1, state)
        return epoch + 1, state

    def save_state(self, call_id: str, epoch: int, state_json: str) -> None:
        """Save under the current epoch only."""
        self._check(call_id, epoch)
        self._calls[call_id] = (epoch, state_json)

    def save_memory(
        self,
        call_id: str,
        epoch: int,
        conversation_id: str,
        namespace: str,
        entry: str,
        json_value: str,
    ) -> None:
        """Store one memory value under the current epoch only."""
        self._check(call_id, epoch)
        self.memory.save(conversation_id, namespace, entry, json_value)

    def _check(self, call_id: str, epoch: int) -> None:
        current, _ = self._calls.get(call_id, (0, None))
        if current != epoch:
            raise StaleCallError(f"call {call_id!r} was taken over by another node")

    def close(self) -> None:
        """Nothing to release."""


class FencedMemory:
    """A ``MemoryStore`` for one claimed call: reads from ``memory``, and writes that land only
    while this node's claim holds (a stale node cannot write over the newer node's memory)."""

    def __init__(self, memory: MemoryStore, calls: CallStateStore, call_id: str, epoch: int):
        self._memory = memory
        self._calls = calls
        self._call_id = call_id
        self._epoch = epoch

    def load(self, conversation_id: str) -> dict[tuple[str, str], str]:
        """Every stored value of a conversation."""
        return self._memory.load(conversation_id)

    def save(self, conversation_id: str, namespace: str, entry: str, json_value: str) -> None:
        """Store one value under this node's epoch (``StaleCallError`` once it is stale)."""
        self._calls.save_memory(
            self._call_id, self._epoch, conversation_id, namespace, entry, json_value
        )

    def close(self) -> None:
        """Nothing of its own: the stores belong to the engine."""


class Checkpoint:
    """One call's claim on its state: saves the session under the claimed epoch."""

    def __init__(self, store: CallStateStore, session: Session, epoch: int) -> None:
        self._store = store
        self._session = session
        self.epoch = epoch
        self._last = ""

    def save(self) -> None:
        """Save the session's state if it changed since the last save."""
        session = self._session
        text = dumps(Snapshot(session.dialogue, session.history.snapshot(), session.turns_started))
        if text != self._last:
            self._store.save_state(session.call.memory_key, self.epoch, text)
            self._last = text


@dataclass(frozen=True, slots=True)
class Claim:
    """This node's claim on a call: its epoch, and the state an earlier claim saved."""

    store: CallStateStore
    call_id: str
    epoch: int
    saved: str | None

    def memory(self, memory: MemoryStore) -> FencedMemory:
        """The call's memory, its writes fenced by this claim's epoch."""
        return FencedMemory(memory, self.store, self.call_id, self.epoch)

    def checkpoint(self, session: Session, resume_line: str) -> Checkpoint:
        """Restore the saved state into ``session`` (a resume), and save it from now on."""
        if self.saved is not None:
            restore(session, loads(self.saved))
            session.resume_line = resume_line
        return Checkpoint(self.store, session, self.epoch)


def claim(store: CallStateStore, call_id: str) -> Claim:
    """Claim the call for this node: a new epoch, and what an earlier node saved.

    Keyed by the provider's call id (``CallInfo.memory_key``), not the gateway's own id: a
    stream that reconnects to another node gets a new gateway id for the same CallSid.
    """
    epoch, saved = store.claim(call_id)
    return Claim(store, call_id, epoch, saved)


def restore(session: Session, snapshot: Snapshot) -> None:
    """Put a saved state into a freshly opened session."""
    session.dialogue = snapshot.dialogue
    session.history = EventHistory()
    for event in snapshot.history:
        session.history.append(event)
    session.turns_started = snapshot.turns_started
    session.turn_ids.update(f"t{n}" for n in range(1, snapshot.turns_started + 1))


async def resumable_turn(session: Session, user: UserInput, channel: TurnChannel) -> None:
    """Run a turn; the first one after a resume says the resume line first.

    The line is a plain ``Say`` of the turn (source ``response``), so the turn seam's event
    set stays as it is; the gateway speaks it, reports it heard, and it enters the history.
    """
    line, session.resume_line = session.resume_line, None
    if line:
        channel.say(line, "response")
        if user_text(user) == SESSION_START_INPUT:
            # The channel asks the agent to speak first: the resume line is what it says.
            channel.emit(TurnEnded(channel.turn_id, "completed"))
            return
    await run_turn(session, user, channel)


#: Events after which the state is saved: what a cancellation at that moment would keep.
_CHECKPOINTS = (ToolStarted, ToolFinished, TurnEnded)


class CheckpointedStream:
    """A turn's stream that saves the call's state at each checkpoint it delivers."""

    def __init__(self, stream: TurnStream, save: Callable[[], None]) -> None:
        self._stream = stream
        self._save = save
        self.turn_id = stream.turn_id

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> TurnEvent:
        try:
            event = await anext(self._stream)
        except StopAsyncIteration:
            self._save()
            raise
        if isinstance(event, _CHECKPOINTS):
            self._save()
        return event

    async def aclose(self) -> None:
        """Close the turn (cancelling it if it runs), then save what it left."""
        await self._stream.aclose()
        self._save()

    def undelivered(self) -> tuple[TurnEvent, ...]:
        """What the turn produced that was never delivered."""
        return self._stream.undelivered()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

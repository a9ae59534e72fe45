"""The streaming turn interface between the gateway and a dialogue engine (design §4).

The gateway drives an engine only through :class:`DialogueEngine`: ``open`` a call, run a
``turn`` per user input and iterate its events, report what the caller ``heard``, ``close``.
A turn yields a small closed set of events. To interrupt a turn the gateway cancels the task
that iterates it and closes the stream (``async with engine.turn(...) as events``): the running
tool sees ``asyncio.CancelledError`` at its ``await``, nothing more is delivered, and
:meth:`TurnEventStream.undelivered` lists what the turn produced that never reached the
gateway (``ToolCancelled`` and ``TurnEnded(reason="cancelled")`` among them, for the timeline).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol, Self, runtime_checkable

from voicegate.engine.tools.buttons import Button


@dataclass(frozen=True, slots=True)
class CallInfo:
    """A session starting: its id, the conversation it continues, and channel metadata.

    ``conversation_id`` keys durable memory (defaults to ``call_id``); ``metadata`` seeds
    ``seed: true`` project fields (contract §4.4).
    """

    call_id: str
    conversation_id: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def memory_key(self) -> str:
        """The key memory is stored under."""
        return self.conversation_id or self.call_id


@dataclass(frozen=True, slots=True)
class Transcript:
    """A final transcript of what the caller said (or a typed line).

    ``speculative``: the caller only paused, and may go on (issue 14, preemptive generation).
    The engine may start the turn (ask the model) but holds everything with an effect (steps,
    memory writes, every tool not marked ``run_early``) until :meth:`DialogueEngine.confirm`;
    a speculative turn cancelled before that leaves no trace in memory or history.
    """

    text: str
    speculative: bool = False


@dataclass(frozen=True, slots=True)
class Dtmf:
    """Keypad digits the caller pressed."""

    digits: str


@dataclass(frozen=True, slots=True)
class ButtonPress:
    """A button the user tapped: its payload (and title, when the channel sends it)."""

    payload: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class SilenceTimeout:
    """The caller said nothing for the configured time."""


UserInput = Transcript | Dtmf | ButtonPress | SilenceTimeout

#: The input a channel sends when a session starts, so the agent may speak first (contract
#: §5.7: override ``default_session_start`` "and have the channel send ``/session_start``").
SESSION_START_INPUT = "/session_start"

SaySource = Literal["model", "tool", "response"]


def user_text(user: UserInput) -> str:
    """The text the engine records and the model reads for a user input."""
    match user:
        case Transcript(text):
            return text.strip()
        case Dtmf(digits):
            return f"/dtmf {digits}"
        case ButtonPress(payload):
            return payload
        case SilenceTimeout():
            return "/silence_timeout"


@dataclass(frozen=True, slots=True)
class Say:
    """Text to speak, streamed as soon as a sentence is ready.

    ``source`` is ``model`` for generated text, ``tool`` for ``context.send`` and ``response``
    for a verbatim response from ``responses.yml`` (contract §7.7).
    """

    turn_id: str
    text: str
    source: SaySource = "model"


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call began."""

    turn_id: str
    call_id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call completed and was recorded; ``outcome`` tells success, error or timeout."""

    turn_id: str
    call_id: str
    name: str
    outcome: Literal["ok", "error", "timeout"]
    result: Any


@dataclass(frozen=True, slots=True)
class ToolCancelled:
    """A tool call was cancelled mid-await: not recorded, its step stays pending."""

    turn_id: str
    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class Buttons:
    """Buttons to offer with the response being delivered."""

    turn_id: str
    buttons: tuple[Button, ...]


@dataclass(frozen=True, slots=True)
class MemorySet:
    """A memory write (PII values arrive as ``[set]``)."""

    turn_id: str
    name: str
    value: Any


@dataclass(frozen=True, slots=True)
class EndCall:
    """End the call once the caller has heard what the turn said; or transfer it.

    Emitted when a response whose metadata says ``end_call: true`` or ``transfer_to: <dest>``
    is delivered (docs/contract-decisions.md, "Hang-up and transfer"). ``transfer_to`` empty:
    hang up. Nothing the turn says after it is spoken.
    """

    turn_id: str
    transfer_to: str = ""


TurnEndReason = Literal["completed", "cancelled", "error"]


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The turn is over; ``detail`` explains an error."""

    turn_id: str
    reason: TurnEndReason
    detail: str = ""


TurnEvent = (
    Say | ToolStarted | ToolFinished | ToolCancelled | Buttons | MemorySet | EndCall | TurnEnded
)


class TurnEventStream(Protocol):
    """The events of one turn; close it (or use ``async with``) when done or interrupted."""

    turn_id: str

    def __aiter__(self) -> Self:
        """The stream is its own iterator."""
        ...

    async def __anext__(self) -> TurnEvent:
        """The next event."""
        ...

    async def aclose(self) -> None:
        """Stop the turn if it still runs; cancels the running tool."""
        ...

    def undelivered(self) -> tuple[TurnEvent, ...]:
        """Events the turn produced that were never delivered (after a cancel or close)."""
        ...

    async def __aenter__(self) -> Self:
        """Use the stream in ``async with``."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the stream."""
        ...


@runtime_checkable
class SpeaksFirst(Protocol):
    """An engine that may speak first when a call connects (optional for engines)."""

    def speaks_first(self, call_id: str) -> bool:
        """Whether the channel should open the call with a ``/session_start`` turn."""
        ...


def speaks_first(engine: object, call_id: str) -> bool:
    """Whether ``engine`` wants a ``/session_start`` turn when the call connects."""
    return isinstance(engine, SpeaksFirst) and engine.speaks_first(call_id)


class DialogueEngine(Protocol):
    """What the gateway needs from a dialogue engine."""

    async def open(self, call: CallInfo) -> None:
        """A session starts (its metadata seeds project memory)."""
        ...

    def turn(self, call_id: str, user: UserInput) -> TurnEventStream:
        """Run one turn for a user input; iterate the returned stream for its events."""
        ...

    async def heard(self, call_id: str, turn_id: str, heard_text: str, interrupted: bool) -> None:
        """Report what the caller actually heard of a turn (the only bot text kept)."""
        ...

    async def confirm(self, call_id: str, turn_id: str) -> None:
        """The caller's turn has ended: a speculative turn may go on with what it held."""
        ...

    async def close(self, call_id: str) -> None:
        """The session ends."""
        ...


def event_record(event: TurnEvent) -> dict[str, Any]:
    """A turn event as a JSON-ready record ``{"event": name, ...}`` (chat output, timelines)."""
    match event:
        case Say(turn_id, text, source):
            return {"event": "say", "turn_id": turn_id, "text": text, "source": source}
        case ToolStarted(turn_id, call_id, name, arguments):
            return _tool("tool_started", turn_id, call_id, name, arguments=dict(arguments))
        case ToolFinished(turn_id, call_id, name, outcome, result):
            return _tool("tool_finished", turn_id, call_id, name, outcome=outcome, result=result)
        case ToolCancelled(turn_id, call_id, name):
            return _tool("tool_cancelled", turn_id, call_id, name)
        case Buttons(turn_id, buttons):
            listed = [{"title": b.title, "value": b.value, "ref": b.ref} for b in buttons]
            return {"event": "buttons", "turn_id": turn_id, "buttons": listed}
        case MemorySet(turn_id, name, value):
            return {"event": "memory_set", "turn_id": turn_id, "name": name, "value": value}
        case EndCall(turn_id, transfer_to):
            record = {"event": "end_call", "turn_id": turn_id}
            return record | ({"transfer_to": transfer_to} if transfer_to else {})
        case TurnEnded(turn_id, reason, detail):
            record = {"event": "turn_ended", "turn_id": turn_id, "reason": reason}
            return record | ({"detail": detail} if detail else {})


def _tool(kind: str, turn_id: str, call_id: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"event": kind, "turn_id": turn_id, "call_id": call_id, "name": name, **extra}

"""The typed event history of a conversation (the "tracker"; contract §4.1, §7.5 d).

Append-only. Tools get a copy through ``context.events``. It holds what the caller heard
(``BotUttered`` comes from ``heard()``, never from generated text, design §4 point 5), tool calls
that completed (a cancelled call is never recorded, point 3), every memory write, and the
skill and ordered-block lifecycle (``FlowEvent``: contract §5.2 ``skill_activated``, §6.5
``ordered_block_*``). Framework tool calls (``activate``, ``set_fields``, ...) are recorded like
any tool call, with ``source="framework"``, so the model's context stays paired on later turns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ToolOutcomeKind = Literal["ok", "error", "timeout"]
ToolCallSource = Literal["local", "mcp", "framework"]


@dataclass(frozen=True, slots=True)
class UserUttered:
    """The user's input that started a turn, as text."""

    turn_id: str
    text: str


@dataclass(frozen=True, slots=True)
class BotUttered:
    """What the caller heard of the bot in one turn (reported by ``heard()``)."""

    turn_id: str
    text: str
    interrupted: bool


@dataclass(frozen=True, slots=True)
class ToolExecuted:
    """A tool call that ran to completion (success or failure) and what the model read back."""

    turn_id: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    outcome: ToolOutcomeKind
    result: Any
    source: ToolCallSource = "local"


@dataclass(frozen=True, slots=True)
class MemoryWritten:
    """A memory write (tracker ``memory_set``); ``turn_id`` is empty outside a turn."""

    turn_id: str
    namespace: str
    entry: str
    value: Any


FlowEventKind = Literal[
    "skill_activated",
    "skill_completed",
    "skill_cancelled",
    "skill_interrupted",
    "skill_resumed",
    "skill_dropped",
    "ordered_block_entered",
    "ordered_block_completed",
    "ordered_block_cancelled",
]


@dataclass(frozen=True, slots=True)
class FlowEvent:
    """A skill or ordered block started, ended, was parked or resumed (tracker flow events).

    ``block_id`` names the block for ``ordered_block_*``; ``step_id`` the step it was at.
    """

    turn_id: str
    kind: FlowEventKind
    skill_id: str
    block_id: str = ""
    step_id: str = ""


Event = UserUttered | BotUttered | ToolExecuted | MemoryWritten | FlowEvent


class EventHistory:
    """The append-only list of a conversation's events."""

    def __init__(self) -> None:
        self._events: list[Event] = []

    def append(self, event: Event) -> None:
        """Record one event."""
        self._events.append(event)

    def snapshot(self) -> list[Event]:
        """A fresh list of every event so far (events themselves are immutable)."""
        return list(self._events)

    def __len__(self) -> int:
        return len(self._events)

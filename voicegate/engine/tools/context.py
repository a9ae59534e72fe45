"""``ToolContext``: what the runtime injects into a tool as ``context=`` (contract §8.4).

One instance per invocation. ``send`` surfaces a message to the user at once and drops it once
the turn is cancelled; ``set_buttons`` works only for a response button source tool;
``memory`` is the scoped memory slice; ``events`` is a fresh copy of the history on every
access; ``is_cancelled`` turns true the moment the turn is cancelled; ``model`` carries the
project's LLM settings and knowledge index.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from voicegate.engine.history import Event
from voicegate.engine.tools.buttons import Button
from voicegate.engine.tools.isolation import EngineCalls
from voicegate.engine.tools.turn_context import TurnContext


class TurnSignals(Protocol):
    """The running turn as a tool sees it."""

    @property
    def is_cancelled(self) -> bool:
        """True once the turn has been cancelled (barge-in, timeout, dropped connection)."""
        ...

    def say(self, text: str) -> None:
        """Surface a message as a ``Say`` event; dropped once the turn is cancelled."""
        ...


class MemoryAccess(Protocol):
    """``context.memory`` as a tool sees it (``MemorySlice`` on the engine's loop)."""

    @property
    def active_skill(self) -> str | None:
        """The skill bare names resolve against first."""
        ...

    def get(self, name: str, default: Any = None) -> Any:
        """The value of ``name``, or ``default``."""
        ...

    def set(self, name: str, value: Any) -> None:
        """Write through at once."""
        ...


class _MemoryAcross:
    """A tool thread's ``context.memory``: reads and writes run on the engine's loop."""

    def __init__(self, memory: MemoryAccess, calls: EngineCalls) -> None:
        self._memory = memory
        self._calls = calls

    @property
    def active_skill(self) -> str | None:
        """The skill bare names resolve against first."""
        return self._memory.active_skill

    def get(self, name: str, default: Any = None) -> Any:
        """The value of ``name``, or ``default``."""
        return self._calls.read(self._memory.get, name, default)

    def set(self, name: str, value: Any) -> None:
        """Write through at once (discarded once the engine abandoned the call)."""
        self._calls.write(f"memory write to {name!r}", self._memory.set, name, value)


class _TurnAcross:
    """A tool thread's view of its turn: ``say`` runs on the engine's loop."""

    def __init__(self, turn: TurnSignals, calls: EngineCalls) -> None:
        self._turn = turn
        self._calls = calls

    @property
    def is_cancelled(self) -> bool:
        """True once the turn was cancelled, or the engine gave up waiting for the tool."""
        return self._calls.abandoned or self._turn.is_cancelled

    def say(self, text: str) -> None:
        """Surface a message (dropped once cancelled; discarded once abandoned)."""
        self._calls.write("context.send", self._turn.say, text)


@dataclass(frozen=True, slots=True)
class ToolModelContext:
    """Read-only model settings for a tool: ``llm_config`` and ``references_index``."""

    llm_config: Mapping[str, Any] = field(default_factory=dict)
    references_index: object | None = None


class ButtonCollector:
    """Receives ``set_buttons`` calls of a response button source tool; the last call wins."""

    def __init__(self) -> None:
        self.buttons: tuple[Button, ...] = ()

    def replace(self, buttons: Sequence[Button]) -> None:
        """Replace the collected buttons (tools reference: a later call replaces the list)."""
        for button in buttons:
            if not isinstance(button, Button):
                raise TypeError(f"set_buttons takes Button values, got {type(button).__name__}")
        self.buttons = tuple(buttons)


class _ButtonsAcross(ButtonCollector):
    """A tool thread's ``set_buttons``: the list is replaced on the engine's loop."""

    def __init__(self, target: ButtonCollector, calls: EngineCalls) -> None:
        super().__init__()
        self._target = target
        self._calls = calls

    def replace(self, buttons: Sequence[Button]) -> None:
        """Replace the collected buttons (checked here, stored on the engine's loop)."""
        for button in buttons:
            if not isinstance(button, Button):
                raise TypeError(f"set_buttons takes Button values, got {type(button).__name__}")
        self._calls.write("set_buttons", self._target.replace, tuple(buttons))


class ToolContext:
    """The runtime's handle for one tool invocation."""

    def __init__(
        self,
        *,
        memory: MemoryAccess,
        turn: TurnSignals,
        events: Callable[[], list[Event]],
        model: ToolModelContext,
        buttons: ButtonCollector | None = None,
        turn_context: TurnContext | None = None,
    ) -> None:
        self._memory = memory
        self._turn = turn
        self._events = events
        self._model = model
        self._buttons = buttons
        #: What ``current_turn_context()`` answers while this invocation runs.
        self.turn_context = turn_context

    def across(self, calls: EngineCalls) -> ToolContext:
        """This context for a tool running on another thread: engine access goes via ``calls``."""
        buttons = self._buttons
        return ToolContext(
            memory=_MemoryAcross(self._memory, calls),
            turn=_TurnAcross(self._turn, calls),
            events=lambda: calls.read(self._events),
            model=self._model,
            buttons=_ButtonsAcross(buttons, calls) if buttons is not None else None,
            turn_context=self.turn_context,
        )

    async def send(self, text: str) -> None:
        """Send a message to the user now, bypassing the model; dropped once cancelled."""
        if not isinstance(text, str):
            raise TypeError(f"context.send takes text, got {type(text).__name__}")
        if text.strip():
            self._turn.say(text.strip())

    def set_buttons(self, buttons: Sequence[Button]) -> None:
        """Attach buttons to the response being delivered (response button source tools only)."""
        if self._buttons is None:
            raise RuntimeError(
                "context.set_buttons is only available to a response button source tool "
                "(a tool named by a response variant's buttons: {source: ...})"
            )
        self._buttons.replace(buttons)

    @property
    def memory(self) -> MemoryAccess:
        """Scoped read/write access to memory."""
        return self._memory

    @property
    def events(self) -> list[Event]:
        """A copy of the conversation's typed event history; changing it changes nothing."""
        return self._events()

    @property
    def is_cancelled(self) -> bool:
        """True once the turn has been cancelled."""
        return self._turn.is_cancelled

    @property
    def model(self) -> ToolModelContext:
        """The project's LLM settings and knowledge index."""
        return self._model

"""The language-model port: messages and tool schemas in, streamed text and tool calls out.

Any model sits behind :class:`LLMPort` (the scripted one for tests and trying projects; real
providers in issue 6). The engine makes one port per call through an :data:`LLMFactory`, so a
stateful port (the scripted model's cursor) belongs to exactly one conversation.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from voicegate.engine.tools.schema import ToolSpec


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """Instructions for the model."""

    text: str


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the user said (or typed, pressed, tapped), as text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks for one tool call; ``call_id`` pairs it with its result."""

    call_id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """One model step: text and/or tool calls."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The result of a tool call, as the JSON text the model reads."""

    call_id: str
    name: str
    content: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of streamed model text."""

    text: str


StreamItem = TextDelta | ToolCall


class LLMPort(Protocol):
    """A model the engine can ask for its next step."""

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        """Stream the model's next step: text deltas as they come, then complete tool calls.

        Raises LLMError when the model cannot answer.
        """
        ...


@runtime_checkable
class Rewindable(Protocol):
    """A port with state of its own (the scripted model's place in its script).

    A speculative turn that is cancelled puts it back where it was (issue 14).
    """

    def mark(self) -> object:
        """Where the port is now."""
        ...

    def rewind(self, mark: object) -> None:
        """Go back to a place :meth:`mark` returned."""
        ...


#: Makes the port for one call (the argument is the call id).
LLMFactory = Callable[[str], LLMPort]

"""What the model reads: a system message and the conversation rebuilt from the history.

A placeholder for the prompt assembly of contract §7.2 (issue 6): persona, rules and the
``### Project Memory`` section (PII as ``[set]``). The conversation holds the user's inputs,
what the caller heard of the bot, and each recorded tool call paired with its result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from voicegate.engine.history import BotUttered, Event, ToolExecuted, UserUttered
from voicegate.engine.llm.port import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from voicegate.engine.memory.render import project_memory_lines
from voicegate.engine.memory.state import MemoryState
from voicegate.engine.project.model import AgentSettings


def system_message(agent: AgentSettings, memory: MemoryState) -> SystemMessage:
    """The system message, rebuilt from live memory for every model call."""
    sections = [agent.persona] if agent.persona else []
    if agent.rules:
        sections.append("\n".join(f"- {rule}" for rule in agent.rules))
    lines = project_memory_lines(memory)
    if lines:  # rendered only when some project value is set (contract §4.6)
        sections.append("### Project Memory\n" + "\n".join(lines))
    return SystemMessage("\n\n".join(sections))


class Conversation:
    """The history as model messages, converted once per event (the history only grows)."""

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._converted = 0

    def messages(self, events: Sequence[Event]) -> list[Message]:
        """Messages for every event of ``events`` (the same history, possibly longer)."""
        for event in events[self._converted :]:
            self._messages.extend(_as_messages(event))
        self._converted = len(events)
        return list(self._messages)


def _as_messages(event: Event) -> list[Message]:
    match event:
        case UserUttered(_, text):
            return [UserMessage(text)]
        case BotUttered(_, text, _):
            return [AssistantMessage(text)]
        case ToolExecuted(_, call_id, name, arguments, _, result):
            call = ToolCall(call_id, name, arguments)
            return [
                AssistantMessage("", (call,)),
                ToolResultMessage(call_id, name, json.dumps(result)),
            ]
        case _:
            return []

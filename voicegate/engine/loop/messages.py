"""The conversation the model reads, rebuilt from the history (the prompt is ``prompt.py``).

It holds the user's inputs, what the caller heard of the bot, and each recorded tool call
(framework calls included) paired with its result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from voicegate.engine.history import BotUttered, Event, ToolExecuted, UserUttered
from voicegate.engine.llm.port import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


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

"""The Chat Completions request body, from the port's messages and tool specs.

Shapes per the OpenAI API reference, "Create chat completion" (POST /chat/completions):
``messages`` holds ``system``/``user`` messages with text ``content``; ``assistant`` messages
with optional ``content`` and ``tool_calls: [{id, type: "function", function: {name,
arguments}}]`` where ``arguments`` is a JSON *string*; and ``tool`` messages answering one call
by ``tool_call_id``. ``tools`` lists ``{type: "function", function: {name, description,
parameters}}`` and is left out when empty (the API rejects an empty list).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from voicegate.engine.llm.port import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from voicegate.engine.llm.selection import ChatModelSettings
from voicegate.engine.tools.schema import ToolSpec


def request_body(
    settings: ChatModelSettings, messages: Sequence[Message], tools: Sequence[ToolSpec]
) -> dict[str, Any]:
    """The JSON body of one streaming request; the entry's extra options go first, so they
    can never replace the model, the messages or the stream flag."""
    body: dict[str, Any] = dict(settings.options)
    body.update(
        model=settings.model,
        messages=[message_json(message) for message in messages],
        stream=True,
    )
    if tools:
        body["tools"] = [tool_json(spec) for spec in tools]
    else:
        body.pop("tools", None)
    return body


def message_json(message: Message) -> dict[str, Any]:
    """One message in the API's shape."""
    match message:
        case SystemMessage(text):
            return {"role": "system", "content": text}
        case UserMessage(text):
            return {"role": "user", "content": text}
        case AssistantMessage(text, ()):
            return {"role": "assistant", "content": text}
        case AssistantMessage(text, calls):
            # content may be null next to tool_calls; send null rather than an empty string
            return {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [_call_json(call) for call in calls],
            }
        case ToolResultMessage(call_id, _, content):
            return {"role": "tool", "tool_call_id": call_id, "content": content}
    raise TypeError(f"not a model message: {message!r}")


def tool_json(spec: ToolSpec) -> dict[str, Any]:
    """One tool as a function the model may call."""
    return {"type": "function", "function": spec.as_json()}


def _call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
    }

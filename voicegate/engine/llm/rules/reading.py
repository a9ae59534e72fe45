"""What the rules orchestrator reads in a model request: the prompt, the tools, this turn.

The orchestrator sits behind the language-model port like any model, so it learns the state of
the dialogue from what the engine sends a model: the offered tools and their schemas (the
``activate`` enum and its flow descriptions, ``set_fields`` properties typed from
``memory.yml``), and the section headings of voicegate's system prompt
(``voicegate/engine/loop/prompt.py``): the active skill, the value being collected, the
memory listing, a paused skill offered back, what was already said this turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from voicegate.engine.llm.port import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from voicegate.engine.tools.schema import ToolSpec

_ACTIVE = re.compile(r"^## Active skill: (\S+)", re.MULTILINE)
_COLLECT = re.compile(r"^Collect `(\w+)`", re.MULTILINE)
_PAUSED = re.compile(r'^## Paused skill\n.*?activate\(flow_id="([^"]+)"\)', re.MULTILINE)
_MEMORY_LINE = re.compile(r"^(\w[\w-]*)\.(\w+): (.*)$")
_FLOW_LINE = re.compile(r"^- (\S+): (.*)$")
_SAID = "### Already said to the user this turn"
_SECTION = re.compile(r"^#{2,3} ", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """A tool call in the conversation and what it returned (None while unanswered)."""

    call: ToolCall
    result: Any = None


@dataclass
class Request:
    """One request to the model, read for the rules."""

    prompt: str
    tools: dict[str, ToolSpec]
    user: str = ""
    continuation: bool = False
    this_turn: list[CallRecord] = field(default_factory=list)
    earlier: list[CallRecord] = field(default_factory=list)

    @property
    def active_skill(self) -> str | None:
        """The active skill's id, when the prompt has the active-skill branch."""
        match = _ACTIVE.search(self.prompt)
        return match.group(1) if match else None

    @property
    def collect_target(self) -> str | None:
        """The entry a collect step asks for now."""
        match = _COLLECT.search(self.prompt)
        return match.group(1) if match else None

    @property
    def paused_skill(self) -> str | None:
        """The skill offered back after a digression."""
        match = _PAUSED.search(self.prompt)
        return match.group(1) if match else None

    @property
    def said_this_turn(self) -> bool:
        """Whether the engine already spoke a verbatim response in this turn."""
        return _SAID in self.prompt

    def instructions(self) -> str:
        """The active skill's visible prose (its section up to the first sub-heading)."""
        match = _ACTIVE.search(self.prompt)
        if match is None:
            return ""
        rest = self.prompt[match.end() :]
        following = _SECTION.search(rest)
        return rest[: following.start()] if following else rest

    def memory(self) -> dict[str, Any]:
        """Values listed in the prompt, ``"<namespace>.<entry>" -> value`` (unset ones left out)."""
        values: dict[str, Any] = {}
        for line in self.prompt.splitlines():
            match = _MEMORY_LINE.match(line)
            if match is None or match.group(3) == "(not set)":
                continue
            values[f"{match.group(1)}.{match.group(2)}"] = _value(match.group(3))
        return values

    def flows(self) -> list[tuple[str, str]]:
        """``(flow id, description)`` of every flow ``activate`` offers."""
        spec = self.tools.get("activate")
        if spec is None:
            return []
        described = {}
        for line in spec.description.splitlines():
            match = _FLOW_LINE.match(line)
            if match:
                described[match.group(1)] = match.group(2)
        enum = spec.parameters["properties"]["flow_id"].get("enum", [])
        return [(flow, described.get(flow, "")) for flow in enum]

    def called(self, name: str) -> list[CallRecord]:
        """This turn's calls of a tool."""
        return [record for record in self.this_turn if record.call.name == name]


def read_request(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Request:
    """The request as the rules see it."""
    prompt = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    request = Request(prompt, {spec.name: spec for spec in tools})
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=-1)
    if last_user >= 0:
        user = messages[last_user]
        assert isinstance(user, UserMessage)
        request.user = user.text
    request.continuation = bool(messages) and isinstance(messages[-1], ToolResultMessage)
    request.earlier = _calls(messages[: last_user + 1])
    request.this_turn = _calls(messages[last_user + 1 :])
    return request


def _calls(messages: Sequence[Message]) -> list[CallRecord]:
    results = {m.call_id: m.content for m in messages if isinstance(m, ToolResultMessage)}
    records = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                content = results.get(call.call_id)
                records.append(CallRecord(call, _value(content) if content is not None else None))
    return records


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text

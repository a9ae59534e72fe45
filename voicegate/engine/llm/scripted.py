"""The scripted model: plays a :class:`Script` back, one model step per request.

Where it is in the script follows from what the engine sends back, so a cancelled turn is
handled the way design §4 asks: a step whose tool calls were served but never answered (the
calls were cancelled, so no result reached the history) stays pending, and the next request
serves it again, only with the calls still missing. A script turn is *in progress* until its
last step has been served and that step's calls have results; while it is, every request
serves its next step, whether in the same engine turn or a later one. A new script turn
starts, with its ``user:`` matcher checked, only on a request that ends with a user message.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

from voicegate.engine.llm.port import (
    Message,
    StreamItem,
    TextDelta,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from voicegate.engine.llm.script import Script, ScriptStep, ScriptTurn
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import LLMError

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w-]*)((?:\.[\w-]+)*)\}")
_WORDS = re.compile(r"\S+\s*")


@dataclass(frozen=True, slots=True)
class _Reply:
    text: str
    calls: tuple[ToolCall, ...]


class ScriptedLLM:
    """An :class:`~voicegate.engine.llm.port.LLMPort` that replays a script for one call."""

    def __init__(self, script: Script) -> None:
        self._script = script
        self._turn = 0  # index of the script turn in progress (or next to start)
        self._step = 0  # index of its next step to serve
        self._outstanding: tuple[ToolCall, ...] = ()  # calls served and not yet answered

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        """Stream the next scripted step: its text word by word, then its tool calls."""
        reply = self._next_reply(messages)
        for word in _WORDS.findall(reply.text):
            await asyncio.sleep(0)  # a real stream suspends between chunks; so may this one
            yield TextDelta(word)
        for call in reply.calls:
            yield call

    def mark(self) -> object:
        """Where the script is (a speculative turn that is cancelled goes back here)."""
        return (self._turn, self._step, self._outstanding)

    def rewind(self, mark: object) -> None:
        """Go back to a place :meth:`mark` returned."""
        assert isinstance(mark, tuple)
        self._turn, self._step, self._outstanding = mark

    @property
    def finished(self) -> bool:
        """Whether every scripted turn has been played through."""
        return self._turn >= len(self._script.turns)

    def _next_reply(self, messages: Sequence[Message]) -> _Reply:
        if self._outstanding:
            answered = {m.call_id for m in messages if isinstance(m, ToolResultMessage)}
            missing = tuple(c for c in self._outstanding if c.call_id not in answered)
            if missing:
                return self._serve(messages, only=missing)  # the pending step, again
            self._outstanding = ()
            self._advance()
        if self._step > 0:
            return self._serve(messages)
        if not messages or not isinstance(messages[-1], UserMessage):
            return _Reply("", ())  # the script turn is over; the model has nothing to add
        self._start_turn(messages[-1].text)
        return self._serve(messages)

    def _start_turn(self, user_text: str) -> None:
        if self.finished:
            raise LLMError(
                f"{self._script.path}: the script has no turn left for the user input "
                f"{user_text!r} (it has {len(self._script.turns)} turns)"
            )
        turn = self._current_turn()
        if not turn.matches(user_text):
            raise LLMError(
                f"{self._script.path}:{turn.line}: turn {self._turn + 1} expects "
                f"{turn.expectation()}, but the user input was {user_text!r}"
            )

    def _serve(self, messages: Sequence[Message], only: tuple[ToolCall, ...] = ()) -> _Reply:
        step = self._current_turn().steps[self._step]
        calls = only or self._calls(step)
        text = _fill_placeholders(step.say, messages)
        if calls:
            self._outstanding = calls
        else:
            self._advance()
        return _Reply(text, calls)

    def _calls(self, step: ScriptStep) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(
                f"call-{self._turn + 1}-{self._step + 1}-{index + 1}", call.name, call.arguments
            )
            for index, call in enumerate(step.calls)
        )

    def _advance(self) -> None:
        self._step += 1
        if self._step >= len(self._current_turn().steps):
            self._turn += 1
            self._step = 0

    def _current_turn(self) -> ScriptTurn:
        return self._script.turns[self._turn]


def _fill_placeholders(text: str, messages: Sequence[Message]) -> str:
    """Replace ``{tool_name.key...}`` by the latest result of that tool; unknown ones stay."""

    def substitute(match: re.Match[str]) -> str:
        name, path = match.group(1), match.group(2)
        found, value = _latest_result(name, messages)
        for key in path.split(".")[1:]:
            if not found:
                break
            found, value = _step_into(value, key)
        if not found:
            return match.group(0)
        return value if isinstance(value, str) else json.dumps(value)

    return _PLACEHOLDER.sub(substitute, text)


def _latest_result(name: str, messages: Sequence[Message]) -> tuple[bool, Any]:
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage) and message.name == name:
            return True, json.loads(message.content)
    return False, None


def _step_into(value: Any, key: str) -> tuple[bool, Any]:
    if isinstance(value, dict) and key in value:
        return True, value[key]
    if isinstance(value, list) and key.isdigit() and int(key) < len(value):
        return True, value[int(key)]
    return False, None

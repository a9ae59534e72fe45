"""``rules``: an embedded, offline orchestrator behind the language-model port.

It lets a project run with no model at all (``voicegate chat PROJECT --llm rules``): it routes by
lexical similarity of the utterance to skill descriptions, fills collect steps and
``set_fields`` from the utterance by declared type, calls a tool its skill's prose names once
the tool's required arguments are known, and speaks responses from ``responses.yml``. What it
can and cannot do is in ``docs/rules-llm.md``.

It reads only what the engine sends any model (the prompt and the offered tools), plus the
project's ``responses.yml`` for its own words. One instance serves one call; it keeps no state
between requests, so a cancelled turn leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncGenerator, Mapping, Sequence

from voicegate.engine.llm.port import LLMFactory, LLMPort, Message, StreamItem, TextDelta, ToolCall
from voicegate.engine.llm.rules.policy import Policy
from voicegate.engine.llm.rules.reading import read_request
from voicegate.engine.llm.rules.speech import Speech
from voicegate.engine.project.model import Project
from voicegate.engine.project.response_model import Response
from voicegate.engine.tools.schema import ToolSpec

_WORDS = re.compile(r"\S+\s*")


class RulesLLM:
    """An :class:`~voicegate.engine.llm.port.LLMPort` that follows fixed rules."""

    def __init__(self, responses: Mapping[str, Response]) -> None:
        self._policy = Policy(Speech(responses))
        self._ids = itertools.count(1)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        """Answer one request: the decided text word by word, then the decided calls."""
        move = self._policy.decide(read_request(messages, tools))
        for word in _WORDS.findall(move.text):
            await asyncio.sleep(0)  # a stream suspends between chunks; so does this one
            yield TextDelta(word)
        for name, arguments in move.calls:
            yield ToolCall(f"rules-{next(self._ids)}", name, arguments)


def rules_factory(project: Project) -> LLMFactory:
    """One rules orchestrator per call, speaking the project's responses."""

    def make(call_id: str) -> LLMPort:
        return RulesLLM(project.responses)

    return make

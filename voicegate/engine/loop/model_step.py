"""One model step: stream the model's answer, speaking each sentence as soon as it is complete."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import aclosing

from voicegate.engine.llm.port import AssistantMessage, LLMPort, Message, TextDelta, ToolCall
from voicegate.engine.loop.sentences import SentenceSplitter
from voicegate.engine.loop.stream import TurnChannel
from voicegate.engine.tools.schema import ToolSpec


async def model_step(
    llm: LLMPort, messages: Sequence[Message], tools: Sequence[ToolSpec], channel: TurnChannel
) -> AssistantMessage:
    """Ask the model for its next step; ``Say`` each finished sentence while it streams."""
    splitter = SentenceSplitter()
    text: list[str] = []
    calls: list[ToolCall] = []
    async with aclosing(llm.stream(messages, tools)) as stream:
        async for item in stream:
            if isinstance(item, TextDelta):
                text.append(item.text)
                for sentence in splitter.feed(item.text):
                    channel.say(sentence, source="model")
            else:
                calls.append(item)
    for sentence in splitter.flush():
        channel.say(sentence, source="model")
    return AssistantMessage("".join(text).strip(), tuple(calls))

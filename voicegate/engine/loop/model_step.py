"""One model step: stream the model's answer, speaking each sentence as soon as it is complete.

An answer is bounded (:data:`MAX_ANSWER_CHARS`): a voice reply runs to a few hundred
characters, and every sentence is synthesised as it comes, so a model that streams on and on
(looping, or an endpoint that never ends its answer) would have hours of audio synthesised
and queued for one call. Past the bound the stream is closed, which drops the model's
connection, and the turn ends in error: the caller has heard the sentences so far.

A model that answers nothing at all (no text, no tool calls) before the turn has said
anything is asked again (contract §7.1, "empty responses are retried"); empty again, the turn
ends in error, so the caller hears the gateway's apology rather than silence.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import aclosing

from voicegate.engine.llm.port import AssistantMessage, LLMPort, Message, TextDelta, ToolCall
from voicegate.engine.loop.sentences import SentenceSplitter
from voicegate.engine.loop.stream import TurnChannel
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import LLMError

log = logging.getLogger(__name__)

#: Characters of text one model step may stream (about five minutes of speech).
MAX_ANSWER_CHARS = 5000
#: How many times an empty answer to a turn that has said nothing yet is asked for again.
EMPTY_RETRIES = 1


async def ask_model(
    llm: LLMPort,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    channel: TurnChannel,
    *,
    fresh: bool,
) -> AssistantMessage:
    """:func:`model_step`, asked again when it answers nothing and the turn has nothing else
    to show: ``fresh`` (no model step before this one) and nothing said; LLMError when it
    keeps answering nothing."""
    for attempt in range(EMPTY_RETRIES + 1):
        reply = await model_step(llm, messages, tools, channel)
        if reply.text or reply.tool_calls or not fresh or channel.spoke:
            return reply
        log.warning(
            "turn %s: the model answered nothing (attempt %d)", channel.turn_id, attempt + 1
        )
    raise LLMError(f"the model answered nothing (no text, no tool calls) {EMPTY_RETRIES + 1} times")


async def model_step(
    llm: LLMPort, messages: Sequence[Message], tools: Sequence[ToolSpec], channel: TurnChannel
) -> AssistantMessage:
    """Ask the model for its next step; ``Say`` each finished sentence while it streams."""
    splitter = SentenceSplitter()
    text: list[str] = []
    calls: list[ToolCall] = []
    length = 0
    async with aclosing(llm.stream(messages, tools)) as stream:
        async for item in stream:
            if isinstance(item, TextDelta):
                length += len(item.text)
                if length > MAX_ANSWER_CHARS:
                    raise LLMError(f"the model's answer passed {MAX_ANSWER_CHARS} characters")
                text.append(item.text)
                for sentence in splitter.feed(item.text):
                    channel.say(sentence, source="model")
            else:
                calls.append(item)
    for sentence in splitter.flush():
        channel.say(sentence, source="model")
    return AssistantMessage("".join(text).strip(), tuple(calls))

"""The timing wrappers report first-token/first-chunk times and close what they wrap at once."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence

import numpy as np
import pytest

from voicegate.engine.llm.port import Message, StreamItem, TextDelta
from voicegate.engine.llm.timed import TimedLLM
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import LLMError
from voicegate.gateway.metrics import TimedTextToSpeech
from voicegate.speech.ports import Samples


class Model:
    def __init__(self, fail: bool = False) -> None:
        self.closed = False
        self.fail = fail

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        try:
            if self.fail:
                raise LLMError("HTTP 503")
            for word in ("a", "b", "c"):
                yield TextDelta(word)
        finally:
            self.closed = True


class Voice:
    def __init__(self) -> None:
        self.closed = False

    @property
    def sample_rate(self) -> int:
        return 8000

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        try:
            for _ in range(3):
                yield np.zeros(160, dtype=np.int16)
        finally:
            self.closed = True


async def test_the_model_wrapper_times_the_first_token_and_closes_the_inner_stream() -> None:
    model, seen, failures = Model(), [], []
    timed = TimedLLM(model, seen.append, lambda: failures.append(1))
    stream = timed.stream([], [])
    assert await anext(stream) == TextDelta("a")
    await stream.aclose()  # a barge-in cancels the turn mid-stream
    assert model.closed
    assert len(seen) == 1
    assert failures == []


async def test_the_model_wrapper_counts_failures() -> None:
    failures: list[int] = []
    timed = TimedLLM(Model(fail=True), lambda s: None, lambda: failures.append(1))
    with pytest.raises(LLMError):
        _ = [item async for item in timed.stream([], [])]
    assert failures == [1]


async def test_the_voice_wrapper_times_the_first_chunk_and_closes_the_inner_stream() -> None:
    voice, seen = Voice(), []
    timed = TimedTextToSpeech(voice, seen.append)
    chunks = timed.synthesize("hello")
    assert isinstance(chunks, AsyncGenerator)
    await anext(chunks)
    await chunks.aclose()
    assert voice.closed
    assert len(seen) == 1
    assert timed.sample_rate == 8000

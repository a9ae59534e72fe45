"""A model port that reports its time to first token and its failures (for metrics).

The engine does not know how they are recorded: the CLI passes plain callables (it wires
them to the gateway's Prometheus metrics).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing

from voicegate.engine.llm.port import LLMFactory, LLMPort, Message, Rewindable, StreamItem
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import LLMError


class TimedLLM:
    """Wraps a port: ``first_token(seconds)`` at each step's first item, ``failed()`` on
    an ``LLMError``."""

    def __init__(
        self, inner: LLMPort, first_token: Callable[[float], None], failed: Callable[[], None]
    ) -> None:
        self._inner = inner
        self._first_token = first_token
        self._failed = failed

    def mark(self) -> object:
        """The inner port's place, if it has one (see ``Rewindable``)."""
        return self._inner.mark() if isinstance(self._inner, Rewindable) else None

    def rewind(self, mark: object) -> None:
        """Put the inner port back where :meth:`mark` found it."""
        if isinstance(self._inner, Rewindable):
            self._inner.rewind(mark)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        """The inner port's stream, timed."""
        started = time.perf_counter()
        first = True
        try:
            # Closed with this generator, at once: a cancelled turn must drop the model's
            # connection now (openai_chat/client.py), not when the inner one is collected.
            async with aclosing(self._inner.stream(messages, tools)) as items:
                async for item in items:
                    if first:
                        first = False
                        self._first_token(time.perf_counter() - started)
                    yield item
        except LLMError:
            self._failed()
            raise


def timed_factory(
    factory: LLMFactory, first_token: Callable[[float], None], failed: Callable[[], None]
) -> LLMFactory:
    """``factory`` whose ports are :class:`TimedLLM`."""

    def make(call_id: str) -> LLMPort:
        return TimedLLM(factory(call_id), first_token, failed)

    return make

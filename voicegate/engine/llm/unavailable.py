"""A model voicegate cannot call, standing in for it until the first request.

A project may select a provider voicegate has no client for (``anthropic``, ``azure``, ...;
contract §2.2 lets any LiteLLM provider through). Refusing it at load would refuse a project
that runs fine with ``--llm scripted:FILE`` or ``rules``, so the project loads and the first
model request fails with the reason, ending that turn with an error (issue 17).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from voicegate.engine.llm.port import LLMFactory, LLMPort, Message, StreamItem
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import LLMError


class UnavailableLLM:
    """An :class:`LLMPort` whose every request raises LLMError with ``reason``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        """Raise LLMError naming why the model cannot be called."""
        raise LLMError(self.reason)
        yield  # pragma: no cover - makes this an async generator


def unavailable_factory(reason: str) -> LLMFactory:
    """A factory of :class:`UnavailableLLM` ports, one per call."""

    def factory(call_id: str) -> LLMPort:
        return UnavailableLLM(reason)

    return factory

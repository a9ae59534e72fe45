"""``current_turn_context()``: whose conversation the running tool call serves.

Contract §1 lists ``rasa.mantle.orchestration.turn_context.current_turn_context()``, which
exposes ``.sender_id``, among the Python paths published projects import [ex]: tools use it
to key their own backend records by conversation. It is importable under that path while a
project's tool modules load (``rasa_compat``), and answers only inside a tool call.

``sender_id`` is the conversation id that keys the call's memory (``CallInfo.memory_key``), the
counterpart of the tracker's sender in Mantle. The value lives in a context variable set around
the tool's coroutine, so it follows the call onto the tool loop thread and is gone afterwards.
"""

from __future__ import annotations

from collections.abc import Coroutine
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TurnContext:
    """The conversation a tool call runs in."""

    sender_id: str


_CURRENT: ContextVar[TurnContext | None] = ContextVar("voicegate_turn_context", default=None)


def current_turn_context() -> TurnContext:
    """The running tool call's ``TurnContext``; ``RuntimeError`` outside a tool call."""
    found = _CURRENT.get()
    if found is None:
        raise RuntimeError("current_turn_context() is only available while a tool runs")
    return found


async def within(turn_context: TurnContext | None, coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` with ``turn_context`` as the current one (nothing set when None)."""
    if turn_context is None:
        return await coroutine
    token = _CURRENT.set(turn_context)
    try:
        return await coroutine
    finally:
        _CURRENT.reset(token)

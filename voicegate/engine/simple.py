"""A dialogue engine from a plain async function: your own bot without the skills contract.

``reply(text, conversation)`` gets what the caller said and the call's conversation so far
(only what the caller actually *heard* of the bot, design §4 point 5) and either returns the
answer as a string or yields it sentence by sentence (an async generator: the first sentence
is spoken while the next is being made). ``FunctionEngine(reply)`` is then a
:class:`~voicegate.engine.seam.DialogueEngine` the gateway drives like the project engine.

The cancellation contract holds as it is (design §4): the generator runs in the task the
gateway cancels on a barge-in, so ``asyncio.CancelledError`` is raised at whatever ``await``
``reply`` is suspended on; nothing it yields afterwards is spoken. An exception from ``reply``
ends the turn with ``TurnEnded("error")``, which the gateway answers with its configured
error response; the call goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from voicegate.engine.seam import (
    CallInfo,
    Say,
    Transcript,
    TurnEnded,
    TurnEvent,
    UserInput,
    user_text,
)

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Conversation:
    """One call as ``reply`` sees it: its ids, metadata and what was said and heard."""

    call_id: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: ``("caller", text)`` and ``("bot", heard_text)`` in order; unheard bot text never.
    history: list[tuple[str, str]] = field(default_factory=list)
    #: Free room for the reply function's own per-call state.
    state: dict[str, Any] = field(default_factory=dict)


#: What ``reply`` may be: ``async def`` returning the answer, or an async generator of sentences.
Reply = Callable[[str, Conversation], Awaitable[str] | AsyncIterator[str]]


class FunctionEngine:
    """A :class:`~voicegate.engine.seam.DialogueEngine` around a ``reply`` function."""

    def __init__(self, reply: Reply) -> None:
        self._reply = reply
        self._calls: dict[str, Conversation] = {}
        # Speculative turns waiting for their go-ahead, by (call id, turn id) (issue 14).
        self._holds: dict[tuple[str, str], asyncio.Event] = {}

    def conversation(self, call_id: str) -> Conversation | None:
        """The conversation of a call that is open now."""
        return self._calls.get(call_id)

    async def open(self, call: CallInfo) -> None:
        """A call starts."""
        self._calls[call.call_id] = Conversation(call.call_id, dict(call.metadata))

    def turn(self, call_id: str, user: UserInput) -> _ReplyStream:
        """Answer one user input with ``reply``'s sentences."""
        conversation = self._calls.setdefault(call_id, Conversation(call_id))
        number = 1 + sum(1 for who, _ in conversation.history if who == "caller")
        turn_id = f"t{number}"
        hold = None
        if isinstance(user, Transcript) and user.speculative:
            hold = self._holds[(call_id, turn_id)] = asyncio.Event()
        return _ReplyStream(turn_id, self._answer(conversation, user_text(user), hold))

    async def _answer(
        self, conversation: Conversation, text: str, hold: asyncio.Event | None
    ) -> AsyncIterator[str]:
        # ``reply`` may do anything: a speculative turn calls it only once confirmed, so one
        # the caller overrides leaves nothing behind (not even its line in the history).
        if hold is not None:
            await hold.wait()
        conversation.history.append(("caller", text))
        async for sentence in _sentences(self._reply(text, conversation)):
            yield sentence

    async def confirm(self, call_id: str, turn_id: str) -> None:
        """A speculative turn may run: the caller's turn has ended."""
        hold = self._holds.pop((call_id, turn_id), None)
        if hold is not None:
            hold.set()

    async def heard(self, call_id: str, turn_id: str, heard_text: str, interrupted: bool) -> None:
        """Keep what the caller heard of the bot (the only bot text the history holds)."""
        conversation = self._calls.get(call_id)
        if conversation is not None and heard_text:
            conversation.history.append(("bot", heard_text))

    async def close(self, call_id: str) -> None:
        """The call ended."""
        self._calls.pop(call_id, None)
        for key in [key for key in self._holds if key[0] == call_id]:
            del self._holds[key]


async def _sentences(answer: Awaitable[str] | AsyncIterator[str]) -> AsyncIterator[str]:
    if inspect.isawaitable(answer):
        yield await answer
        return
    async for sentence in answer:
        if sentence.strip():  # nothing to say is not a sentence
            yield sentence


class _ReplyStream:
    """One turn: ``Say`` per sentence, then ``TurnEnded`` (a ``TurnEventStream``)."""

    def __init__(self, turn_id: str, sentences: AsyncIterator[str]) -> None:
        self.turn_id = turn_id
        self._sentences = sentences
        self._done = False
        self._cancelled = False

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> TurnEvent:
        if self._done:
            raise StopAsyncIteration
        try:
            sentence = await anext(self._sentences)
        except StopAsyncIteration:
            return self._end(TurnEnded(self.turn_id, "completed"))
        except asyncio.CancelledError:
            self._cancelled = True
            self._done = True
            raise
        except Exception as error:  # the user's code failed: the gateway apologises
            log.warning("turn %s: reply failed: %r", self.turn_id, error)
            return self._end(TurnEnded(self.turn_id, "error", f"{type(error).__name__}: {error}"))
        return Say(self.turn_id, sentence.strip(), "model")

    def _end(self, ended: TurnEnded) -> TurnEvent:
        self._done = True
        return ended

    async def aclose(self) -> None:
        """Stop the reply if it still runs."""
        if not self._done:
            self._cancelled = True
            self._done = True
        close = getattr(self._sentences, "aclose", None)
        if close is not None:
            await close()

    def undelivered(self) -> tuple[TurnEvent, ...]:
        """After a cancel: the turn ended cancelled (for the timeline)."""
        return (TurnEnded(self.turn_id, "cancelled"),) if self._cancelled else ()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

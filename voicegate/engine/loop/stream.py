"""One turn as a stream of events: the worker that runs it, and the gateway's iterator.

The turn runs in a worker task owned by the stream (and by its session, which outlives a
worker that is slow to unwind). Its events go through a queue to whoever iterates the stream,
so a tool's ``context.send`` reaches the gateway while the tool is still awaiting.

Cancellation (design §4): when the task iterating the stream is cancelled, or the stream is
closed early, the turn is marked cancelled (``context.is_cancelled`` turns true and ``send``
drops its message), the worker is cancelled (the running tool sees ``CancelledError`` at its
``await``) and awaited for up to ``unwind_grace`` seconds (the engine waits ~0.5 s for a tool
to unwind [contract §8.6, ex R-SARA]). Queued events are never delivered: they stay readable
through :meth:`TurnStream.undelivered` for the timeline. ``is_cancelled`` also turns true the
moment the iterating task is asked to cancel (``Task.cancelling()``), before the request lands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Self

from voicegate.engine.seam import Buttons, EndCall, Say, SaySource, TurnEnded, TurnEvent
from voicegate.engine.tools.buttons import Button

log = logging.getLogger(__name__)

DEFAULT_UNWIND_GRACE = 0.5


class TurnChannel:
    """The running turn's outlet for events, and its cancellation state."""

    def __init__(self, turn_id: str, hold: asyncio.Event | None = None) -> None:
        self.turn_id = turn_id
        self.queue: asyncio.Queue[TurnEvent | None] = asyncio.Queue()
        # A speculative turn's go-ahead (engine/loop/speculation.py); None: not speculative.
        self._hold = hold
        self._cancelled = False
        self._ending = False
        self._consumer: asyncio.Task[object] | None = None
        #: Whether the turn has queued speech (a model that then answers nothing is not
        #: leaving the caller in silence).
        self.spoke = False

    @property
    def is_cancelled(self) -> bool:
        """True once the turn was cancelled or the task iterating it was asked to cancel."""
        consumer = self._consumer
        return self._cancelled or (consumer is not None and consumer.cancelling() > 0)

    @property
    def ending(self) -> bool:
        """True once the turn ended the call: nothing more it says can be heard."""
        return self._ending

    def say(self, text: str, source: SaySource = "tool") -> None:
        """Queue text to speak; dropped once the turn is cancelled (design §4 point 2)."""
        if not self.is_cancelled and not self._ending:
            self.queue.put_nowait(Say(self.turn_id, text, source))
            self.spoke = True

    def offer_buttons(self, buttons: tuple[Button, ...]) -> None:
        """Queue buttons for the response being delivered; dropped once cancelled."""
        if not self.is_cancelled and not self._ending:
            self.queue.put_nowait(Buttons(self.turn_id, buttons))

    def end_call(self, transfer_to: str = "") -> None:
        """Ask the gateway to end (or transfer) the call; later speech is dropped."""
        if not self.is_cancelled and not self._ending:
            self._ending = True
            self.queue.put_nowait(EndCall(self.turn_id, transfer_to))

    def emit(self, event: TurnEvent) -> None:
        """Queue a non-speech event (tool, memory and end events are kept for the timeline)."""
        self.queue.put_nowait(event)

    async def go_ahead(self) -> None:
        """Before anything with an effect: a speculative turn waits here until confirmed."""
        if self._hold is not None:
            await self._hold.wait()

    def watch(self, consumer: asyncio.Task[object] | None) -> None:
        """Follow the task that iterates the turn."""
        self._consumer = consumer

    def cancel(self) -> None:
        """Mark the turn cancelled."""
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        """Whether the turn was marked cancelled (not counting a pending task cancel)."""
        return self._cancelled


TurnBody = Callable[[TurnChannel], Awaitable[None]]


class TurnStream:
    """The events of one turn (implements the seam's ``TurnEventStream``)."""

    def __init__(
        self,
        turn_id: str,
        body: TurnBody,
        *,
        running: set[TurnStream],
        before_start: Callable[[], Awaitable[None]] | None = None,
        unwind_grace: float = DEFAULT_UNWIND_GRACE,
        hold: asyncio.Event | None = None,
    ) -> None:
        self.turn_id = turn_id
        self._body = body
        self._running = running
        self._before_start = before_start
        self._grace = unwind_grace
        self._channel = TurnChannel(turn_id, hold)
        self._worker: asyncio.Task[None] | None = None
        self._closed = False
        self._leftover: list[TurnEvent] = []

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> TurnEvent:
        if self._closed:
            raise StopAsyncIteration
        try:
            if self._worker is None:
                await self._start()
            event = await self._channel.queue.get()
        except asyncio.CancelledError:
            await self._stop()
            raise
        if event is None:
            await self._finish()
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        """Stop the turn if it still runs (a close before the end counts as a cancel)."""
        if not self._closed:
            await self._stop()

    def undelivered(self) -> tuple[TurnEvent, ...]:
        """Once the stream is closed: events produced but never delivered, in order.

        Speech among them was dropped (never to be played); ``ToolCancelled`` and
        ``TurnEnded(reason="cancelled")`` tell the timeline how the turn ended.
        """
        if not self._closed:
            return ()
        queue = self._channel.queue
        while not queue.empty():
            event = queue.get_nowait()
            if event is not None:
                self._leftover.append(event)
        return tuple(self._leftover)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _start(self) -> None:
        if self._before_start is not None:
            await self._before_start()
        self._channel.watch(asyncio.current_task())
        worker = asyncio.create_task(self._work(), name=f"turn {self.turn_id}")
        self._worker = worker
        self._running.add(self)
        worker.add_done_callback(lambda _: self._running.discard(self))

    async def _work(self) -> None:
        try:
            await self._body(self._channel)
        except asyncio.CancelledError:
            self._channel.emit(TurnEnded(self.turn_id, "cancelled"))
            raise
        finally:
            self._channel.queue.put_nowait(None)

    async def _finish(self) -> None:
        self._closed = True
        worker = self._worker
        if worker is not None:
            await asyncio.wait({worker})
            error = None if worker.cancelled() else worker.exception()
            if error is not None:
                raise error

    @property
    def worker(self) -> asyncio.Task[None] | None:
        """The task running the turn, once started."""
        return self._worker

    def interrupt(self) -> asyncio.Task[None] | None:
        """Cancel the turn (once); returns the worker to wait for, if it still runs."""
        worker = self._worker
        if self._channel.cancelled:
            return worker if worker is not None and not worker.done() else None
        self._channel.cancel()
        if worker is None or worker.done():
            return None
        worker.cancel()
        return worker

    async def _stop(self) -> None:
        self._closed = True
        worker = self.interrupt()
        if worker is None:
            return
        done, _ = await asyncio.wait({worker}, timeout=self._grace)
        if not done:
            # The session still owns the worker; closing the session waits for it.
            log.warning("turn %s: a tool did not unwind within %.1f s", self.turn_id, self._grace)
            return
        error = None if worker.cancelled() else worker.exception()
        if error is not None:
            log.error("turn %s failed while unwinding", self.turn_id, exc_info=error)

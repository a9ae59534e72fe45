"""The dialogue plane on its own thread: the media loop never waits on the engine (design §10).

Issue 12: receive, decode, VAD, the barge-in machine, playout and flush must never wait on the
engine, tools, the model client or MCP. The engine (with its model clients and MCP sessions)
runs on a :class:`DialoguePlane`, an event loop in a thread of its own; calls reach it through
:class:`ThreadedEngine`, which implements the streaming turn interface (design §4) on the
media loop by passing messages across the two loops:

- ``open`` and ``close`` are awaited by the call that starts or ends (only that call waits);
- ``heard`` is posted and not awaited, so reporting what the caller heard at a barge-in never
  holds up the flush; each call's requests run in order on the dialogue loop, so ``heard`` of
  one turn is recorded before the next turn starts;
- a turn's events are pushed to the media loop as they come; cancelling the media-side turn
  cancels the task that iterates the engine's stream on the dialogue loop, which is exactly the
  gateway's cancel of design §4 (``CancelledError`` at the tool's await, sends dropped, step
  pending, memory kept), and ``undelivered`` lists what the engine produced but never delivered.

Project tools run on tool loop threads of their own (``engine/tools/isolation.py``), so a tool
that blocks stalls neither plane. docs/architecture.md explains the choice.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypeVar

from voicegate.engine.seam import (
    CallInfo,
    DialogueEngine,
    TurnEvent,
    TurnEventStream,
    UserInput,
    speaks_first,
)
from voicegate.errors import EngineError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long the media side waits for a cancelled turn to unwind on the dialogue loop (the
#: engine's own unwind grace, 0.5 s, plus the tool loop's, 0.5 s, plus a margin).
UNWIND_WAIT_S = 1.5
#: How long ending a call waits for its dialogue requests to finish.
CLOSE_WAIT_S = 5.0
#: How long stopping the plane waits for its thread.
STOP_WAIT_S = 5.0


class DialoguePlane:
    """An event loop in a thread of its own, where the dialogue engine lives."""

    def __init__(self, name: str = "voicegate-dialogue") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The dialogue loop (once started)."""
        if self._loop is None:
            raise RuntimeError("the dialogue plane is not started")
        return self._loop

    def start(self) -> None:
        """Start the thread and its loop."""
        ready = threading.Event()
        loop = asyncio.new_event_loop()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            try:
                loop.run_forever()
            finally:
                _close_loop(loop)

        self._loop = loop
        self._thread = threading.Thread(target=serve, name=self._name, daemon=True)
        self._thread.start()
        ready.wait()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run a coroutine on the dialogue loop; its future is the caller's handle."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the dialogue loop and await its result from another loop."""
        return await asyncio.wrap_future(self.submit(coroutine))

    def post(self, callback: Callable[..., object], *args: Any) -> None:
        """Call ``callback(*args)`` on the dialogue loop soon."""
        self.loop.call_soon_threadsafe(callback, *args)

    def stop(self) -> None:
        """Stop the loop and wait for the thread."""
        if self._loop is None or self._thread is None:
            return
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STOP_WAIT_S)
        if self._thread.is_alive():
            log.error("the dialogue thread did not stop within %.0f s", STOP_WAIT_S)
        self._loop = self._thread = None

    @contextlib.asynccontextmanager
    async def hosting(self, context: AbstractAsyncContextManager[T]) -> AsyncIterator[T]:
        """Enter ``context`` on the dialogue loop (e.g. MCP sessions), yield, exit it there."""
        entered: concurrent.futures.Future[T] = concurrent.futures.Future()
        release = threading.Event()

        async def hold() -> None:
            async with context as value:
                entered.set_result(value)
                await asyncio.get_running_loop().run_in_executor(None, release.wait)

        held = self.submit(hold())
        try:
            value = await asyncio.wrap_future(_first_of(entered, held))
            yield value
        finally:
            release.set()
            await asyncio.wrap_future(held)


def _first_of(
    entered: concurrent.futures.Future[T], held: concurrent.futures.Future[None]
) -> concurrent.futures.Future[T]:
    """``entered``, failed with ``held``'s error if entering the context failed."""

    def failed(done: concurrent.futures.Future[None]) -> None:
        if not entered.done():
            error = done.exception() or RuntimeError("the context ended before it was entered")
            entered.set_exception(error)

    held.add_done_callback(failed)
    return entered


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    leftover = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in leftover:
        task.cancel()
    if leftover:
        loop.run_until_complete(asyncio.wait(leftover, timeout=STOP_WAIT_S))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


#: One call's request to its engine session, run on the dialogue loop; a request that starts
#: a turn returns the turn's pump, which runs on beside the following requests.
Pump = Coroutine[Any, Any, None]
Request = Callable[[], Coroutine[Any, Any, Pump | None]]


@dataclass(eq=False)
class _CallLine:
    """One call's ordered requests on the dialogue loop, and the task that serves them."""

    requests: asyncio.Queue[Request | None]
    served: concurrent.futures.Future[None]


class ThreadedEngine:
    """A :class:`DialogueEngine` on the media loop, running ``engine`` on a dialogue plane."""

    def __init__(self, engine: DialogueEngine, plane: DialoguePlane) -> None:
        self._engine = engine
        self._plane = plane
        self._lines: dict[str, _CallLine] = {}

    @property
    def inner(self) -> DialogueEngine:
        """The engine on the dialogue plane."""
        return self._engine

    @property
    def plane(self) -> DialoguePlane:
        """Where the engine runs (e.g. to reach its MCP sessions from a test)."""
        return self._plane

    def speaks_first(self, call_id: str) -> bool:
        """Whether the engine on the plane opens calls with ``/session_start``."""
        return speaks_first(self._engine, call_id)

    async def open(self, call: CallInfo) -> None:
        """Open the session on the dialogue loop (only this call waits for it)."""
        await self._plane.run(self._engine.open(call))
        requests: asyncio.Queue[Request | None] = asyncio.Queue()
        served = self._plane.submit(_serve_line(call.call_id, requests))
        self._lines[call.call_id] = _CallLine(requests, served)

    def turn(self, call_id: str, user: UserInput) -> RemoteTurn:
        """A turn whose events cross from the dialogue loop; it starts on ``async with``."""
        if call_id not in self._lines:
            raise EngineError(f"call {call_id!r} is not open")
        return RemoteTurn(
            lambda turn: self._post(call_id, turn.starter(self._engine, call_id, user))
        )

    async def heard(self, call_id: str, turn_id: str, heard_text: str, interrupted: bool) -> None:
        """Post what the caller heard; recorded in order, before the call's next turn."""
        engine = self._engine

        async def report() -> None:
            await engine.heard(call_id, turn_id, heard_text, interrupted)
            return None

        self._post(call_id, report)

    async def confirm(self, call_id: str, turn_id: str) -> None:
        """Post the go-ahead of a speculative turn (after its start, in the call's order)."""
        engine = self._engine

        async def confirm() -> None:
            await engine.confirm(call_id, turn_id)
            return None

        self._post(call_id, confirm)

    async def close(self, call_id: str) -> None:
        """End the session after the call's pending requests; waits for it (bounded)."""
        line = self._lines.pop(call_id, None)
        if line is None:
            return
        engine = self._engine

        async def close() -> None:
            await engine.close(call_id)
            return None

        self._plane.post(line.requests.put_nowait, close)
        self._plane.post(line.requests.put_nowait, None)
        try:
            await asyncio.wait_for(asyncio.wrap_future(line.served), CLOSE_WAIT_S)
        except TimeoutError:
            log.error(
                "call %s: the dialogue engine did not close within %.0f s", call_id, CLOSE_WAIT_S
            )

    def _post(self, call_id: str, request: Request) -> None:
        line = self._lines.get(call_id)
        if line is None:
            log.warning("call %s: not open on the dialogue plane; request dropped", call_id)
            return
        self._plane.post(line.requests.put_nowait, request)


async def _serve_line(call_id: str, requests: asyncio.Queue[Request | None]) -> None:
    """On the dialogue loop: run one call's requests in order until the end marker."""
    async with asyncio.TaskGroup() as turns:
        while (request := await requests.get()) is not None:
            try:
                pump = await request()
            except Exception:
                log.exception("call %s: dialogue request failed", call_id)
                continue
            if pump is not None:
                turns.create_task(pump)


class _End:
    """The dialogue side finished the turn; ``undelivered`` are the engine's leftovers."""

    def __init__(self, undelivered: tuple[TurnEvent, ...], error: BaseException | None) -> None:
        self.undelivered = undelivered
        self.error = error


class RemoteTurn:
    """The media loop's end of one turn running on the dialogue plane (``TurnEventStream``)."""

    def __init__(self, start: Callable[[RemoteTurn], None]) -> None:
        self.turn_id = ""
        self._start = start
        self._media_loop: asyncio.AbstractEventLoop | None = None
        self._events: asyncio.Queue[TurnEvent | _End] = asyncio.Queue()
        self._started: asyncio.Future[str] | None = None
        self._ended: asyncio.Future[_End] | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._awaiting_engine = False
        self._dialogue_loop: asyncio.AbstractEventLoop | None = None
        self._leftover: list[TurnEvent] = []
        self._closed = False

    # --- media loop ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        loop = asyncio.get_running_loop()
        self._media_loop = loop
        self._started = loop.create_future()
        self._ended = loop.create_future()
        self._start(self)
        try:
            self.turn_id = await asyncio.shield(self._started)
        except asyncio.CancelledError:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> TurnEvent:
        if self._closed:
            raise StopAsyncIteration
        item = await self._events.get()
        if isinstance(item, _End):
            self._closed = True
            self._leftover.extend(item.undelivered)
            if item.error is not None:
                raise item.error
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Cancel the turn on the dialogue loop if it still runs; wait for it to unwind."""
        if self._ended is None or self._ended.done():
            self._closed = True
            return
        self._closed = True
        self._cancel_remote()
        try:
            await asyncio.wait_for(asyncio.shield(self._ended), UNWIND_WAIT_S)
        except TimeoutError:
            log.warning("turn %s: the dialogue plane did not unwind it in time", self.turn_id)

    def undelivered(self) -> tuple[TurnEvent, ...]:
        """Once closed: events the engine produced that were never delivered, in order."""
        if not self._closed:
            return ()
        while not self._events.empty():
            item = self._events.get_nowait()
            if isinstance(item, _End):
                self._leftover.extend(item.undelivered)
            else:
                self._leftover.append(item)
        if self._ended is not None and self._ended.done() and not self._ended.cancelled():
            ended = self._ended.result()
            for event in ended.undelivered:
                if event not in self._leftover:
                    self._leftover.append(event)
        return tuple(self._leftover)

    def _cancel_remote(self) -> None:
        loop = self._dialogue_loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._interrupt_pump)

    # --- dialogue loop ------------------------------------------------------------------------

    def starter(self, engine: DialogueEngine, call_id: str, user: UserInput) -> Request:
        """The request that starts this turn on the dialogue loop; returns the turn's pump."""

        async def start() -> Pump | None:
            try:
                stream = engine.turn(call_id, user)
            except Exception as error:
                self._to_media(_set_exception, self._started, error)
                return None
            self._dialogue_loop = asyncio.get_running_loop()
            self._to_media(_set_result, self._started, stream.turn_id)
            return self._pump(stream)

        return start

    def _interrupt_pump(self) -> None:
        """On the dialogue loop: the media side closed the turn.

        Cancelling the pump while it awaits the engine's next event is the gateway's cancel of
        design §4; at any other moment the pump sees ``_closed`` and closes the stream itself
        (a cancel then would cut short the stream's wait for its tool to unwind).
        """
        if self._pump_task is not None and self._awaiting_engine:
            self._pump_task.cancel()

    async def _pump(self, stream: TurnEventStream) -> None:
        """On the dialogue loop: iterate the engine's turn, pushing events to the media loop."""
        self._pump_task = asyncio.current_task()
        error: BaseException | None = None
        try:
            async with stream:
                # The media side may have closed before this ran; then nothing starts.
                while not self._closed:
                    self._awaiting_engine = True
                    try:
                        event = await anext(stream, None)
                    finally:
                        self._awaiting_engine = False
                    if event is None:
                        break
                    self._to_media(self._events.put_nowait, event)
        except asyncio.CancelledError:
            pass  # the media side cancelled the turn: the engine's stream did design §4
        except Exception as failure:
            error = failure
        end = _End(stream.undelivered(), error)
        self._to_media(self._events.put_nowait, end)
        self._to_media(_set_result, self._ended, end)

    def _to_media(self, callback: Callable[..., object], *args: Any) -> None:
        assert self._media_loop is not None
        with contextlib.suppress(RuntimeError):  # the media loop is closed: the call is gone
            self._media_loop.call_soon_threadsafe(callback, *args)


def _set_result(future: asyncio.Future[T] | None, value: T) -> None:
    if future is not None and not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any] | None, error: BaseException) -> None:
    if future is not None and not future.done():
        future.set_exception(error)

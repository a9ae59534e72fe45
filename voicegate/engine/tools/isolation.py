"""Project tools run on a tool loop thread, so a tool that blocks cannot stall the engine.

Issue 12 and design §10: a published project's tool looped forever in synchronous SQLite code,
and a ``time.sleep(5)`` inside an ``async def`` tool froze every call for 5 s, because tools ran
on the loop that also ran the engine and the media. ``@tool`` coroutines now run on an event
loop of their own, in a thread (:class:`ToolLoops`); the engine awaits each call's outcome, so
``tool_timeout`` fires on the engine's loop whatever the tool does.

Why one shared tool loop rather than a thread per call: tools written to the contract may keep
loop-bound objects between calls (an ``httpx.AsyncClient`` or ``aiohttp.ClientSession`` made at
module level). They keep working as long as every call runs on the same loop. When that loop
stops answering its heartbeat (a tool blocks its thread), the next call starts on a fresh loop
and the stalled one is retired once its calls end; a thread that never comes back is abandoned.

The cancellation contract (design §4) holds across the thread: cancelling the engine-side
await cancels the tool's task on its loop (``CancelledError`` at the tool's ``await``), the
engine waits up to ``grace`` for the tool to unwind, and memory the tool wrote is kept. What
the tool touches on the engine (memory, ``send``, history) is marshalled onto the engine's loop
(:class:`EngineCalls`); after the engine gave up on a call, its writes and sends are discarded
and logged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How often a tool loop proves it is not blocked.
HEARTBEAT_S = 0.05
#: A tool loop whose heartbeat is older than this is stalled: new calls go to a fresh loop.
STALL_AFTER_S = 0.25
#: How long a cancelled tool may take to unwind before the engine gives up on it
#: (the engine waits ~0.5 s for a tool to unwind, contract §8.6).
DEFAULT_GRACE_S = 0.5
#: How long closing waits for each tool thread to stop.
JOIN_TIMEOUT_S = 1.0


class Abandoned(Exception):  # noqa: N818 - a state, not an error raised to users
    """Internal: an engine call made by a tool the engine no longer waits for."""


class CompletedBeforeCancel(Exception):  # noqa: N818 - a signal, not an error
    """The tool returned on its thread before the engine's cancel reached it.

    Such a call returned normally, so it is recorded and its step advances (design §4 point 3;
    running it again next turn could repeat an irreversible action); the caller records it and
    then lets the cancellation go on.
    """

    def __init__(self, value: Any) -> None:
        super().__init__("the tool returned before its cancel arrived")
        self.value = value


class ToolExited(Exception):  # noqa: N818 - carries a tool's exit, not an engine error
    """A tool raised ``SystemExit`` (``sys.exit()``, argparse), or another ``BaseException``.

    asyncio re-raises ``SystemExit`` and ``KeyboardInterrupt`` out of the loop that runs the
    task: left alone, one tool's ``sys.exit()`` stopped the shared tool loop (every later tool
    call of every call failed) and then the engine's loop, ending the process. The tool's call
    fails instead, like a tool raising any other exception (a failure the model reads).
    """


class _Call:
    """One tool call's task, set on the tool loop when the call starts."""

    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None


class EngineCalls:
    """Runs a tool's calls into the engine (memory, send, history) on the engine's loop.

    Engine state is owned by its loop's thread (the SQLite store, the turn's queue), so a tool
    on another thread never touches it directly: each call is handed to the engine loop and the
    tool thread waits for the result, which keeps a tool's ``memory.set`` then ``memory.get``
    in order. Once :meth:`abandon` is called, writes are discarded and logged.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, tool_name: str) -> None:
        self._loop = loop
        self._tool = tool_name
        self._abandoned = False

    @property
    def abandoned(self) -> bool:
        """True once the engine stopped waiting for this tool call."""
        return self._abandoned

    def abandon(self) -> None:
        """From now on, discard what the tool writes or sends."""
        self._abandoned = True

    def read(self, function: Callable[..., T], *args: Any) -> T:
        """A read of engine state, answered on the engine loop."""
        return self._run(function, args)

    def write(self, what: str, function: Callable[..., object], *args: Any) -> None:
        """A write to engine state; discarded (and logged) once the call was abandoned."""
        if self._abandoned:
            log.error("tool %r was abandoned; its %s is discarded", self._tool, what)
            return
        try:
            self._run(function, args)
        except Abandoned:
            log.error("tool %r was abandoned; its %s is discarded", self._tool, what)

    def _run(self, function: Callable[..., T], args: tuple[Any, ...]) -> T:
        if _running_loop() is self._loop:
            return function(*args)
        result: concurrent.futures.Future[T] = concurrent.futures.Future()

        def call() -> None:
            if self._abandoned and not result.done():
                result.set_exception(Abandoned())
                return
            try:
                result.set_result(function(*args))
            except BaseException as error:
                result.set_exception(error)

        try:
            self._loop.call_soon_threadsafe(call)
        except RuntimeError:  # the engine's loop is closed: the gateway has stopped
            raise Abandoned from None
        return result.result()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _ToolLoop:
    """One thread running an event loop for tool calls, with a heartbeat."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.calls = 0
        self.retired = False
        self._beat = time.monotonic()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def stalled(self, now: float) -> bool:
        """Whether the loop has missed its heartbeat (a tool blocks its thread)."""
        return now - self._beat > STALL_AFTER_S

    def stop(self) -> None:
        """Ask the loop to stop once it gets control back."""
        with contextlib.suppress(RuntimeError):  # already closed
            self.loop.call_soon_threadsafe(self.loop.stop)

    def join(self, timeout: float) -> bool:
        """Wait for the thread to end; False if it is still blocked."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._heartbeat)
        try:
            self.loop.run_forever()
        finally:
            self._close()

    def _heartbeat(self) -> None:
        self._beat = time.monotonic()
        self.loop.call_later(HEARTBEAT_S, self._heartbeat)

    def _close(self) -> None:
        leftover = [task for task in asyncio.all_tasks(self.loop) if not task.done()]
        for task in leftover:
            task.cancel()
        if leftover:
            self.loop.run_until_complete(asyncio.wait(leftover, timeout=JOIN_TIMEOUT_S))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


class ToolLoops:
    """Where project tools run: a shared tool loop, replaced when a tool blocks it."""

    def __init__(self, *, grace: float = DEFAULT_GRACE_S) -> None:
        self._grace = grace
        self._names = itertools.count(1)
        self._current: _ToolLoop | None = None
        self._retired: list[_ToolLoop] = []
        self._closed = False

    async def run(
        self,
        name: str,
        start: Callable[[EngineCalls], Coroutine[Any, Any, T]],
    ) -> T:
        """Run the coroutine ``start(engine_calls)`` makes on a tool loop; await its outcome.

        Cancelling this await cancels the tool on its loop and waits up to ``grace`` for it to
        unwind; a tool still running after that is abandoned (logged) and the cancel goes on.
        """
        if self._closed:
            raise RuntimeError("the tool loops are closed")
        engine_loop = asyncio.get_running_loop()
        calls = EngineCalls(engine_loop, name)
        tool_loop = self._loop_for_call()
        outcome: asyncio.Future[T] = engine_loop.create_future()
        call = _Call()
        tool_loop.calls += 1
        outcome.add_done_callback(lambda _: self._call_ended(tool_loop))
        tool_loop.loop.call_soon_threadsafe(
            _start_call, tool_loop.loop, functools.partial(start, calls), outcome, engine_loop, call
        )
        try:
            return await asyncio.shield(outcome)
        except asyncio.CancelledError:
            if _returned(outcome) or await self._cancel(name, tool_loop, call, outcome, calls):
                raise CompletedBeforeCancel(outcome.result()) from None
            raise

    async def _cancel(
        self,
        name: str,
        tool_loop: _ToolLoop,
        call: _Call,
        outcome: asyncio.Future[Any],
        calls: EngineCalls,
    ) -> bool:
        """Cancel the call on its loop and wait for it to unwind; True if it had returned."""
        engine_loop = asyncio.get_running_loop()
        acknowledged: asyncio.Future[bool] = engine_loop.create_future()
        tool_loop.loop.call_soon_threadsafe(_cancel_call, call, acknowledged, engine_loop)
        done, _ = await asyncio.wait({outcome}, timeout=self._grace)
        if not done:
            calls.abandon()
            # Nobody awaits the outcome now; whatever the tool ends with later is only logged
            # here, not left as "Future exception was never retrieved".
            outcome.add_done_callback(_log_abandoned_end(name))
            log.error(
                "tool %r did not stop within %.1f s of its cancel (its thread is blocked); "
                "it is abandoned: what it writes or sends from now on is discarded",
                name,
                self._grace,
            )
            return False
        if not _returned(outcome):
            error = None if outcome.cancelled() else outcome.exception()
            if error is not None and not isinstance(error, asyncio.CancelledError):
                log.warning("tool %r failed while unwinding", name, exc_info=error)
            return False
        # It returned: before the cancel reached it (recorded), or by swallowing it (not).
        acked, _ = await asyncio.wait({acknowledged}, timeout=self._grace)
        return bool(acked) and acknowledged.result()

    def _loop_for_call(self) -> _ToolLoop:
        current = self._current
        if current is not None and current.calls > 0 and current.stalled(time.monotonic()):
            log.warning("the tool loop is blocked by a running tool; new tool calls use a new one")
            current.retired = True
            self._retired.append(current)
            current = None
        if current is None:
            current = _ToolLoop(f"voicegate-tools-{next(self._names)}")
            self._current = current
        return current

    def _call_ended(self, tool_loop: _ToolLoop) -> None:
        tool_loop.calls -= 1
        if tool_loop.retired and tool_loop.calls == 0:
            tool_loop.stop()
            self._retired.remove(tool_loop)

    def close(self) -> None:
        """Stop every tool loop; a thread still blocked in a tool is left behind (logged)."""
        self._closed = True
        loops = [*self._retired, *([self._current] if self._current else [])]
        self._current, self._retired = None, []
        for tool_loop in loops:
            tool_loop.stop()
        for tool_loop in loops:
            if not tool_loop.join(JOIN_TIMEOUT_S):
                log.error("a tool thread is still blocked at shutdown; it is left behind")


def _log_abandoned_end(name: str) -> Callable[[asyncio.Future[Any]], None]:
    """A done callback for an abandoned call's outcome: log how the tool finally ended."""

    def log_end(outcome: asyncio.Future[Any]) -> None:
        error = None if outcome.cancelled() else outcome.exception()
        if isinstance(error, Abandoned):
            how = "at its next engine call, which was refused"
        elif error is not None:
            how = f"with {type(error).__name__}: {error}"
        else:
            how = "normally (its result is discarded)"
        log.warning("abandoned tool %r ended %s", name, how)

    return log_end


def _returned(outcome: asyncio.Future[Any]) -> bool:
    """Whether the call's outcome is a returned value (not a cancel or an exception)."""
    return outcome.done() and not outcome.cancelled() and outcome.exception() is None


def _start_call(
    loop: asyncio.AbstractEventLoop,
    make: Callable[[], Coroutine[Any, Any, T]],
    outcome: asyncio.Future[T],
    engine_loop: asyncio.AbstractEventLoop,
    call: _Call,
) -> None:
    """On the tool loop: start the call and report its end to the engine's loop."""
    task = loop.create_task(contained(make))
    call.task = task
    task.add_done_callback(lambda done: _report(done, outcome, engine_loop))


async def contained(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the tool coroutine ``make()`` returns; a ``BaseException`` it raises (not a cancel)
    is a ``ToolExited``.

    The coroutine is made here, not by the caller: a task cancelled before its first step (a
    barge-in just as the call starts) never runs this body, and a coroutine made beforehand
    would be left never awaited.
    """
    try:
        return await make()
    except (asyncio.CancelledError, Exception):
        raise
    except BaseException as error:  # SystemExit, KeyboardInterrupt, a custom BaseException
        raise ToolExited(f"{type(error).__name__}: {error}") from error


def _cancel_call(
    call: _Call, acknowledged: asyncio.Future[bool], engine_loop: asyncio.AbstractEventLoop
) -> None:
    """On the tool loop: cancel the call's task (``CancelledError`` at the tool's await).

    Tells the engine's loop whether the task had already returned when the cancel came.
    """
    task = call.task
    completed_first = task is not None and task.done() and not task.cancelled()
    if task is not None and not task.done():
        task.cancel()

    def settle() -> None:
        if not acknowledged.done():
            acknowledged.set_result(completed_first)

    with contextlib.suppress(RuntimeError):  # the engine's loop is closed
        engine_loop.call_soon_threadsafe(settle)


def _report(
    task: asyncio.Task[T], outcome: asyncio.Future[T], engine_loop: asyncio.AbstractEventLoop
) -> None:
    def settle() -> None:
        if outcome.done():
            return
        if task.cancelled():
            outcome.cancel()
        elif (error := task.exception()) is not None:
            outcome.set_exception(error)
        else:
            outcome.set_result(task.result())

    with contextlib.suppress(RuntimeError):  # the engine's loop is closed
        engine_loop.call_soon_threadsafe(settle)

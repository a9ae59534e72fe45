"""The process's decoding capacity, shared by every call: a bounded pool with fair priorities.

Decoding a Whisper utterance takes hundreds of milliseconds of CPU, so it never runs on the
event loop: a call's frames keep flowing while any call's utterance is decoded. At most
``size`` decodes run at once (one worker thread each). A stream asks for a *slot* and only
then picks the audio to decode, so an interim transcript always covers the freshest audio
(older interims that waited are never decoded: they are stale). When a slot frees up, a
stream waiting with a final transcript due goes before streams waiting for interims, so
one caller's interims never delay another caller's end of turn.

Slots are handed back from the worker thread that finished, so a decode whose caller was
cancelled mid-way keeps its slot until the thread is really free, and a pool that outlives
one event loop (tests) never leaks a slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from voicegate.clock.virtual import charged, offloaded
from voicegate.errors import SpeechError

_T = TypeVar("_T")


@dataclass(eq=False, slots=True)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    urgent: Callable[[], bool]
    granted: bool = field(default=False)


class DecodePool:
    """``size`` worker threads and the slots that admit decodes to them."""

    def __init__(self, size: int, *, name: str = "decode") -> None:
        if size < 1:
            raise SpeechError(f"decode pool: size must be at least 1, got {size}")
        self._executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix=name)
        self.name = name  # also the component whose latency virtual time charges (issue 19)
        self._lock = threading.Lock()
        self._free = size
        self._waiting: list[_Waiter] = []

    @contextlib.asynccontextmanager
    async def slot(self, urgent: Callable[[], bool]) -> AsyncIterator[Lease]:
        """Hold one slot; ``urgent()`` says, when one frees up, whether a final is waiting."""
        await self._acquire(urgent)
        lease = Lease(self)
        try:
            yield lease
        finally:
            lease.end()

    def close(self) -> None:
        """Stop the worker threads once running decodes finish."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _submit(self, work: Callable[[], _T]) -> Future[_T]:
        return self._executor.submit(work)

    async def _acquire(self, urgent: Callable[[], bool]) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return
            waiter = _Waiter(loop, loop.create_future(), urgent)
            self._waiting.append(waiter)
        try:
            await waiter.future
        except asyncio.CancelledError:
            with self._lock:
                if waiter in self._waiting:
                    self._waiting.remove(waiter)
                    raise
            if waiter.granted and waiter.future.done() and not waiter.future.cancelled():
                self._release()  # the slot arrived just as the caller gave up
            raise

    def _release(self) -> None:
        """Give a slot back (from any thread): to a waiting final first, else the oldest."""
        while True:
            with self._lock:
                waiter = self._next_waiter()
                if waiter is None:
                    self._free += 1
                    return
                waiter.granted = True
            try:
                waiter.loop.call_soon_threadsafe(self._grant, waiter)
                return
            except RuntimeError:  # that waiter's event loop is gone: try the next one
                continue

    def _next_waiter(self) -> _Waiter | None:
        if not self._waiting:
            return None
        chosen = next((w for w in self._waiting if w.urgent()), self._waiting[0])
        self._waiting.remove(chosen)
        return chosen

    def _grant(self, waiter: _Waiter) -> None:
        if waiter.future.cancelled():
            self._release()
        else:
            waiter.future.set_result(None)


class Lease:
    """One held slot: runs at most one piece of work at a time on a worker thread."""

    def __init__(self, pool: DecodePool) -> None:
        self._pool = pool
        self._running: Future[Any] | None = None
        self._ended = False

    async def run(self, work: Callable[[], _T]) -> _T:
        """Run ``work`` on a worker thread and wait for its result."""
        if self._ended or self._running is not None:
            raise SpeechError("decode pool: a lease runs one piece of work while it is held")
        future = self._pool._submit(work)
        self._running = future
        try:
            return await offloaded(future, self._pool.name)
        finally:
            if future.done():
                self._running = None

    def start(self, work: Callable[[], _T]) -> asyncio.Future[_T]:
        """Run ``work`` on a worker thread; its result arrives in the returned future.

        The caller may stop waiting for it (a stale decode): the slot stays held until the
        thread is free, as for a cancelled :meth:`run`.
        """
        if self._ended or self._running is not None:
            raise SpeechError("decode pool: a lease runs one piece of work while it is held")
        running = self._pool._submit(work)
        self._running = running
        # Held and charged like run()'s, so virtual time cannot move on while it decodes.
        result = asyncio.wrap_future(charged(running, self._pool.name))
        result.add_done_callback(_retrieve)  # a stale decode's failure is nobody's to report
        return result

    def end(self) -> None:
        """Return the slot now, or when the work still running on its thread finishes."""
        self._ended = True
        running = self._running
        if running is None or running.done():
            self._pool._release()
            return
        running.add_done_callback(lambda _: self._pool._release())


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()

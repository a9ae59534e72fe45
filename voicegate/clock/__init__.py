"""Clocks: a protocol, the real monotonic clock, and a fake clock for tests and fast replay.

Design §6: audio decisions run on media time from frame counts; a ``Clock`` is passed in
wherever wall time matters (timeouts, pacing), so tests replay a 60 s call in well under a
second with identical events every run.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    """Seconds on a monotonic timeline, and a way to wait on it."""

    def now(self) -> float:
        """Current time in seconds; only differences are meaningful."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait until ``seconds`` have passed on this clock."""
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        """Current monotonic time in seconds."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Sleep on the event loop."""
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock that moves only when told to; sleepers wake in deadline order."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        """Current fake time in seconds."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Wait until :meth:`advance` moves time past the deadline."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), waiter))
        await waiter

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has passed."""
        if seconds < 0:
            raise ValueError("a clock never goes backwards")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, waiter = heapq.heappop(self._sleepers)
            if not waiter.done():
                waiter.set_result(None)

    @property
    def pending_sleepers(self) -> int:
        """How many sleepers are still waiting (cancelled ones included until popped)."""
        return sum(1 for _, _, w in self._sleepers if not w.done())

"""A call's wall-clock limits: no `start` in time, no audio for too long, a call too long.

Issue 15 #4. One timer per call, not one per message: the receive loop only notes the time
of each audio message (one float store), and the timer, when it fires, re-arms itself at the
next deadline or expires the ``asyncio.timeout`` around the receive loop. The loop then ends
with a :class:`PolicyViolationError` naming the limit (closed 1008).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from voicegate.errors import PolicyViolationError
from voicegate.gateway.limits import Limits


class Watchdog:
    """Ends the guarded block when a limit of :class:`Limits` is broken."""

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._loop = asyncio.get_running_loop()
        self._opened = self._loop.time()
        self._started: float | None = None
        self._last_media = self._opened
        self._timeout: asyncio.Timeout | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._reason = ""

    @asynccontextmanager
    async def guard(self) -> AsyncIterator[None]:
        """Run the block until it ends or a limit is broken (then PolicyViolationError)."""
        try:
            async with asyncio.timeout(None) as timeout:
                self._timeout = timeout
                self._arm()
                try:
                    yield
                finally:
                    self._disarm()
        except TimeoutError:
            if not self._reason:
                raise
            raise PolicyViolationError(self._reason) from None

    def started(self) -> None:
        """The call started: the start timeout no longer applies, the others do."""
        self._started = self._last_media = self._loop.time()
        self._disarm()
        self._arm()

    def media(self) -> None:
        """Audio arrived (called per message, so it only stores the time)."""
        self._last_media = self._loop.time()

    def _deadline(self) -> tuple[float, str]:
        """The nearest deadline and the reason the call ends if it passes."""
        limits = self._limits
        if self._started is None:
            s = limits.start_timeout_s
            return self._opened + s, f"no 'start' within {s:g} s (limits.start_timeout_s)"
        idle = self._last_media + limits.idle_timeout_s
        end = self._started + limits.max_call_s
        if idle <= end:
            return idle, f"no audio for {limits.idle_timeout_s:g} s (limits.idle_timeout_s)"
        return end, f"call longer than {limits.max_call_s:g} s (limits.max_call_s)"

    def _arm(self) -> None:
        self._timer = self._loop.call_at(self._deadline()[0], self._check)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        """The timer fired: re-arm if audio came meanwhile, else end the block."""
        deadline, reason = self._deadline()
        now = self._loop.time()
        if now < deadline:
            self._timer = self._loop.call_at(deadline, self._check)
            return
        self._timer = None
        self._reason = reason
        assert self._timeout is not None
        self._timeout.reschedule(now)  # expires at once: cancels the guarded block

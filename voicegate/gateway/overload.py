"""Load shedding: new calls are refused while this worker's media loop runs behind.

Issue 12: past what a worker's CPU can carry, every call on it degrades at once (at 300 calls
on 2 cores, 84 had choppy playout and 55 were never answered), because the media loop wakes
each call later and later. A gateway should refuse the call it cannot carry instead, so the
provider tries another node (Twilio's fallback URL, a load balancer reading ``/readyz``) and
the calls already up keep real-time audio. FreeSWITCH does this with ``min-idle-cpu``; here the
measure is the one that hurts a call, the media loop's lag (gateway/loopwatch.py), taken as a
median over a window so that one stall (a GC pass, a burst of call starts) sheds nothing.

Hysteresis: shedding starts when the median exceeds ``shed_lag_ms`` and stops when it falls
below half of it, so admission does not flap at the threshold.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections import deque
from collections.abc import Callable

from voicegate.gateway.transport import CLOSE_TRY_AGAIN_LATER, Refusal

log = logging.getLogger(__name__)

#: The span of lag samples the median is taken over.
WINDOW_S = 2.0
#: Fewer samples than this in the window decide nothing (a loop stalled for the whole window
#: still yields one sample per stall, so a long stall counts once it is long enough).
MIN_SAMPLES = 3


class LoadGuard:
    """Decides from the media loop's lag samples whether this worker takes new calls."""

    def __init__(
        self,
        shed_lag_ms: float,
        *,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._shed_ms = shed_lag_ms
        self._resume_ms = shed_lag_ms / 2
        self._window_s = window_s
        self._clock = clock
        self._samples: deque[tuple[float, float]] = deque()
        self._median_ms = 0.0
        self._shedding = False

    @property
    def shedding(self) -> bool:
        """True while new calls are refused."""
        return self._shedding

    def record(self, lag_ms: float) -> None:
        """One media-loop lag sample (the loop monitor's callback)."""
        now = self._clock()
        samples = self._samples
        samples.append((now, lag_ms))
        while samples[0][0] < now - self._window_s:
            samples.popleft()
        if len(samples) < MIN_SAMPLES:
            return
        self._median_ms = statistics.median(lag for _, lag in samples)
        if not self._shedding and self._median_ms > self._shed_ms:
            self._shedding = True
            log.warning(
                "the media loop is %.0f ms behind (median over %g s, limits.shed_lag_ms %g): "
                "refusing new calls until it is below %g ms",
                self._median_ms,
                self._window_s,
                self._shed_ms,
                self._resume_ms,
            )
        elif self._shedding and self._median_ms < self._resume_ms:
            self._shedding = False
            log.info("the media loop caught up (%.0f ms behind): taking calls", self._median_ms)

    def refusal(self) -> Refusal | None:
        """Why a new call is refused now (1013, try again later), or None."""
        if not self._shedding:
            return None
        return Refusal(
            CLOSE_TRY_AGAIN_LATER,
            f"overloaded: the media loop is {self._median_ms:.0f} ms behind, try again",
        )

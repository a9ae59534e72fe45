"""Load shedding: a worker whose media loop falls behind takes no more calls than it carries.

Issue 12: past what a worker's CPU can carry, every call on it degrades at once (at 300 calls
on 2 cores, 84 had choppy playout and 55 were never answered), because the media loop wakes
each call later and later. A gateway should refuse the call it cannot carry instead, so the
provider tries another node (Twilio's fallback URL, a load balancer reading ``/readyz``) and
the calls already up keep real-time audio. FreeSWITCH does this with ``min-idle-cpu``; here the
measure is the one that hurts a call: how late the media loop is (gateway/loopwatch.py).

**The measure** is the share of the last ``window_s`` during which the loop was more than
``LATE_MS`` overdue. Each of the monitor's samples covers one 10 ms sleep plus its lateness;
only lateness past 50 ms counts: it is what a barge-in can spare (the caller's speech is
detected, and the provider flushed, only when the loop reads the frames), well before the audio
queued at the provider runs dry (``send_ahead_ms``, 500 ms by default, gateway/playout.py;
with 100 ms, as when this was measured, a later loop let it run dry). Measured with
bench/calls.py on 2 cores, ramping 300 calls over 5 s, that share stayed at 0 for the first
seconds while the loop was already overdue by a few ms 20 % of the time, and rose to 0.2-0.9
within two seconds once the calls outgrew the CPU. A median or percentile of the samples would
mislead: a loop stalled for 500 ms yields one sample, the short waits between stalls yield
dozens, so at 300 calls the median stayed at 1 ms. One stall (a GC pass) is a small share of
the window and sheds nothing.

**The limit** is adaptive, additive-increase/multiplicative-decrease as in TCP congestion
control: while the share is above ``shed_share``, the worker's own call limit is cut to 90 % of
the calls it holds, once per window, and new calls are refused (1013) until calls end below it.
While the share stays under a third of ``shed_share``, the limit grows 5 % a window. The limit
never falls below ``min_calls``: a worker with that few calls that runs late is not late
because of them (a starved machine, a blocking call on the loop), and refusing the next call
would not help the ones it has. A plain on/off threshold was tried first: it reopened
whenever a burst of call starts had passed and admitted the next burst (in one run, 115 of the
135 calls it let in were choppy).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable

from voicegate.gateway.loopwatch import LAG_INTERVAL_S
from voicegate.gateway.transport import CLOSE_TRY_AGAIN_LATER, Refusal

log = logging.getLogger(__name__)

#: The span of lag samples the share is taken over, and the least time between two changes
#: of the limit.
WINDOW_S = 2.0
#: Lateness up to this is within a barge-in's budget (see the module doc).
LATE_MS = 50.0
#: Samples spanning less than this decide nothing (a worker that just started has no history).
MIN_SPAN_S = 0.5
#: On overload the limit becomes this share of the calls held ...
DECREASE = 0.9
#: ... and each healthy window it grows by this share (at least one call).
INCREASE = 0.05


class LoadGuard:
    """This worker's own call limit, from its media loop's lateness (see the module doc)."""

    def __init__(
        self,
        shed_share: float,
        *,
        min_calls: int = 10,
        interval_s: float = LAG_INTERVAL_S,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._shed = shed_share
        self._min_calls = min_calls
        self._healthy = shed_share / 3
        self._interval_s = interval_s
        self._window_s = window_s
        self._clock = clock
        # (taken at, lateness, lateness past LATE_MS), in s
        self._samples: deque[tuple[float, float, float]] = deque()
        self._lag_s = 0.0  # the samples' lateness, summed over the window
        self._late_s = 0.0  # the same, past LATE_MS
        self._share = 0.0
        self._limit: int | None = None  # None: no limit of the worker's own
        self._changed_at = -math.inf

    @property
    def limit(self) -> int | None:
        """The most calls this worker takes now (None: only the configured capacity)."""
        return self._limit

    @property
    def overloaded(self) -> bool:
        """The loop was over ``LATE_MS`` late more than the shedding share of the window."""
        return self._share > self._shed

    def record(self, lag_ms: float) -> None:
        """One media-loop lag sample (the loop monitor's callback)."""
        now, lag_s, late_s = self._clock(), lag_ms / 1000, max(0.0, lag_ms - LATE_MS) / 1000
        samples = self._samples
        samples.append((now, lag_s, late_s))
        self._lag_s += lag_s
        self._late_s += late_s
        while samples[0][0] < now - self._window_s:
            _, old_lag_s, old_late_s = samples.popleft()
            self._lag_s -= old_lag_s
            self._late_s -= old_late_s
        span_s = len(samples) * self._interval_s + self._lag_s
        if span_s >= MIN_SPAN_S:
            self._share = max(0.0, self._late_s) / span_s  # max: float sums drift below 0
        limit = self._limit
        if limit is not None and self._share < self._healthy and self._settled(now):
            self._limit = limit + max(1, int(limit * INCREASE))
            self._changed_at = now

    def refusal(self, calls: int) -> Refusal | None:
        """Why a new call is refused while this worker holds ``calls`` (1013), or None."""
        now = self._clock()
        if self.overloaded and self._settled(now):
            cut = max(self._min_calls, int(calls * DECREASE))
            if self._limit is None or cut < self._limit:
                log.warning(
                    "the media loop was over %g ms late %.0f %% of the last %g s with %d calls "
                    "(limits.shed_late_share %g): this worker now takes at most %d",
                    LATE_MS,
                    100 * self._share,
                    self._window_s,
                    calls,
                    self._shed,
                    cut,
                )
                self._limit = cut
            self._changed_at = now
        if self._limit is None or calls < self._limit:
            return None
        return Refusal(
            CLOSE_TRY_AGAIN_LATER,
            f"overloaded: this worker carries {calls} call{'' if calls == 1 else 's'}, its "
            f"media loop was over {LATE_MS:g} ms late {100 * self._share:.0f} % of the last "
            f"{self._window_s:g} s; try again",
        )

    def _settled(self, now: float) -> bool:
        return now - self._changed_at >= self._window_s

"""Per-client-address limits on new work: webhooks and upgrades per second, open sockets.

Issue 15 #10. A token bucket per address (``rate`` per second, ``burst`` at once) answers
429 when empty. The table of addresses is itself bounded (``MAX_ADDRESSES``, least recently
seen dropped first) so a scan from many addresses cannot grow it without limit. Behind a
proxy every request comes from the proxy's address: then these limits apply to it as a whole.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

#: Addresses remembered at once; the least recently seen is forgotten first.
MAX_ADDRESSES = 10_000


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; full at first."""

    __slots__ = ("_burst", "_rate", "_then", "_tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self._rate = rate
        self._burst = burst
        self._tokens = burst
        self._then = now

    def take(self, now: float) -> bool:
        """Take one token at time ``now``; False (none taken) when the bucket is empty."""
        self._tokens = min(self._burst, self._tokens + (now - self._then) * self._rate)
        self._then = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


class RateLimiter:
    """A token bucket per client address."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float]) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def allow(self, address: str) -> bool:
        """Take one token for ``address``; False when its bucket is empty."""
        now = self._clock()
        bucket = self._buckets.pop(address, None) or TokenBucket(self._rate, self._burst, now)
        self._buckets[address] = bucket  # now the most recently seen
        if len(self._buckets) > MAX_ADDRESSES:
            self._buckets.popitem(last=False)
        return bucket.take(now)


class SocketCounter:
    """Open WebSockets per client address, up to ``limit`` each."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._open: dict[str, int] = {}

    def acquire(self, address: str) -> bool:
        """Count one more socket for ``address``; False (not counted) when at the limit."""
        count = self._open.get(address, 0)
        if count >= self._limit:
            return False
        self._open[address] = count + 1
        return True

    def release(self, address: str) -> None:
        """One socket of ``address`` closed."""
        count = self._open.get(address, 0) - 1
        if count > 0:
            self._open[address] = count
        else:
            self._open.pop(address, None)

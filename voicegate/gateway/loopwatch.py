"""The media-loop lag monitor: how late the event loop wakes a task that asked to sleep 10 ms.

Every call's media runs on this loop, so its lateness is the delay any frame, mark or flush
may suffer (design §10). The samples go into a histogram with fixed bucket bounds, so two
snapshots can be diffed and histograms of several workers added.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable

#: Upper bounds (ms, inclusive) of the lag histogram's buckets; one more bucket counts the
#: samples above the last bound. Finer around 20 ms, the p99 target of issue 12.
LAG_BUCKET_UPPER_MS: tuple[float, ...] = (
    0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 25, 30, 50, 75, 100, 150, 200, 300, 500, 1000, 2000, 5000,
)  # fmt: skip
#: How long the monitor sleeps between samples.
LAG_INTERVAL_S = 0.01


def lag_bucket(lag_ms: float) -> int:
    """Index of the bucket counting ``lag_ms`` (``len(LAG_BUCKET_UPPER_MS)``: above them all)."""
    return bisect.bisect_left(LAG_BUCKET_UPPER_MS, lag_ms)


async def watch_loop(record: Callable[[float], None], interval_s: float = LAG_INTERVAL_S) -> None:
    """Forever: sleep ``interval_s`` and ``record`` the overshoot in ms (cancel to stop)."""
    while True:
        before = time.perf_counter()
        await asyncio.sleep(interval_s)
        record(max(0.0, (time.perf_counter() - before - interval_s) * 1000))

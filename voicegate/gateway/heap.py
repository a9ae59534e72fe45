"""A serving process's startup heap, left out of the cyclic garbage collector's full passes.

Issue 12, the choppy calls of bench/calls.py (bot audio gaps of 240-250 ms while the media
loop's lag p99 stayed near 30 ms): a started worker holds about 140,000 objects tracked by
the garbage collector (modules, settings, the engine's project, the models' wrappers), and
CPython's full collection (generation 2) walks every one of them while it holds the GIL. On
this 2-core machine under load a full pass took 140-200 ms, and it stopped the media loop,
the dialogue thread and every call with it. Calls starting allocate quickly, so both workers
ran one at the same moment; the caller's send-ahead (100 ms, ``gateway/playout.py``) ran dry
and every speaking call heard the same gap. A sampling lag monitor sees such a stall as one
sample, so the loop's p99 hid it.

``gc.freeze()`` (Python docs, ``gc`` module) moves every tracked object to a permanent
generation that later collections ignore. Run once the process has built everything it
keeps and before it admits calls, the full passes walk only the calls' own objects: measured
with 100 calls, 28-37 ms at the end of the level instead of 140-200 ms during it. The startup
garbage is collected first, so nothing that is already garbage stays frozen for good.
Objects frozen here still go when their reference count drops; only a cycle among them would
stay, and startup objects live as long as the process anyway.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)


def freeze_startup_heap() -> int:
    """Collect the startup garbage, then freeze what lives on; the objects now frozen."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("startup heap frozen: %d objects left out of garbage collection passes", frozen)
    return frozen

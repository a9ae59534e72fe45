"""One Silero batch per worker: the windows calls finish within a short deadline, scored together.

Issue 12: Silero was ~20 % of a busy worker's CPU, one ~200 µs inference per 32 ms window per
call. A window scored in a batch costs ~65 µs (``vad/silero_batch.py``), so the worker keeps
one :class:`SileroBatcher` that every call's VAD hands its finished windows to. The first
window of a batch arms a timer (``deadline_ms``; 0: the next turn of the event loop, which
gathers every call whose frame arrived in the same wake-up); the batch runs when it fires, or
at once when ``max_streams`` calls wait. Each call awaits its own windows before it steps its
next frame, so its frames keep their order, and a speech onset is detected at most
``deadline_ms`` (or one loop turn) later than scored alone.

A call that ends while it waits (its task is cancelled) is left out of the batch.
"""

from __future__ import annotations

import asyncio

from voicegate.vad.silero import SileroScorer
from voicegate.vad.silero_batch import score_together


class SileroBatcher:
    """Gathers calls' queued Silero windows on the media loop and scores them in one go."""

    def __init__(self, deadline_ms: int = 0, max_streams: int = 64) -> None:
        self._deadline_s = deadline_ms / 1000
        self._max_streams = max_streams
        self._waiting: list[tuple[SileroScorer, asyncio.Future[None]]] = []
        self._timer: asyncio.Handle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batches = 0  # batches scored so far (tests and benchmarks read it)

    async def score(self, scorer: SileroScorer) -> None:
        """Score ``scorer``'s queued windows in the next batch; returns once they are settled."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # A batch left by a loop that stopped (tests run one loop after another) is void.
            self._waiting, self._timer, self._loop = [], None, loop
        future = loop.create_future()
        self._waiting.append((scorer, future))
        if len(self._waiting) >= self._max_streams:
            self._flush()
        elif self._timer is None:
            self._timer = (
                loop.call_later(self._deadline_s, self._flush)
                if self._deadline_s > 0
                else loop.call_soon(self._flush)
            )
        await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, []
        live = [(scorer, future) for scorer, future in waiting if not future.done()]
        if not live:
            return
        self.batches += 1
        try:
            score_together([scorer for scorer, _ in live])
        except Exception as error:  # onnxruntime failed: every waiting call gets the error
            for _, future in live:
                future.set_exception(error)
            return
        for _, future in live:
            future.set_result(None)

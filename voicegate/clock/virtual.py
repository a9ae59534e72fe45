"""Virtual media time: an event loop whose clock jumps to the next timer when nothing can run.

Design §6 and issue 19: a replayed call must make the same decisions at any replay speed. In a
:class:`VirtualTimeLoop`, ``loop.time()`` (and so ``asyncio.sleep``, ``asyncio.timeout``,
``call_at``: every timer of the caller, gateway, playout, watchdog, engine and tools) is virtual.
Time advances only when

- no callback is ready and the sockets have nothing to read, and
- no off-loop job is *held*: a thread's future (decodes, inference, ``run_in_executor``) or
  an awaited call to an I/O-bound engine (:func:`holding`).

While a job is held, the loop waits for it on the wall clock and virtual time stands still;
when it finishes, the result is delivered a modelled latency later in virtual time
(:class:`LatencyModel`), not after its wall time. So the timeline depends only on what the
components do, never on how busy the machine is. This is the idea of trio's autojump clock
and of the ``looptime`` package; ``looptime`` itself charges a running thread its *wall* time
in small steps, which is what made fast replays differ (docs/replay.md, "Virtual time").

``pace`` bounds how fast virtual time may run against the wall clock (``pace=1``: real
time); the timeline is the same whatever the pace, only the wall time it takes differs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import selectors
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

_T = TypeVar("_T")
_Events = list[tuple[selectors.SelectorKey, int]]

#: Longest real wait for held work between checks; a finished job wakes the loop at once.
HELD_WAIT_S = 0.1

#: Off-loop work a component charges in virtual time, in ms; medians measured on this machine
#: (README "Turn-taking", docs/turn-taking.md, docs/replay.md). Fakes (scripted recogniser
#: and model, tone synthesiser) answer on the loop and cost nothing.
DEFAULT_LATENCY_MS: Mapping[str, int] = {
    "whisper": 100,  # one Whisper tiny.en decode of a pause (10 s window; bench/speech.py: 89)
    "smart-turn": 80,  # one Smart Turn inference (60-100 ms of one core)
    "espeak": 2,  # espeak-ng's first chunk at 16 kHz: median of 12 demo sentences, 1.9 ms
}


@dataclass(frozen=True, slots=True)
class LatencyModel:
    """Media time charged per component for off-loop work; unknown components cost 0."""

    ms: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_LATENCY_MS))

    def charge_s(self, component: str) -> float:
        """Seconds of virtual time one job of ``component`` takes."""
        return self.ms.get(component, 0) / 1000

    def overridden(self, overrides: Mapping[str, int]) -> LatencyModel:
        """This model with some components' latencies replaced."""
        return LatencyModel({**self.ms, **overrides})


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop on virtual time (see the module docstring)."""

    def __init__(self, latency: LatencyModel | None = None, pace: float | None = None) -> None:
        selector = selectors.DefaultSelector()
        self._real_select: Callable[[float | None], _Events] = selector.select
        selector.select = self._select  # type: ignore[method-assign,assignment]
        super().__init__(selector)
        self.latency = latency or LatencyModel()
        self._pace = pace
        self._now = 0.0
        self._wall_start = time.perf_counter()
        self._holds = 0
        self._anchor: tuple[float, float] | None = None  # (wall, virtual) in real_time()

    def time(self) -> float:
        """Virtual seconds since the loop was made."""
        return self._now

    def hold(
        self,
        future: asyncio.Future[Any] | concurrent.futures.Future[Any],
        then: Callable[[], object] | None = None,
    ) -> None:
        """Stop time until ``future`` (running off the loop) is done; ``then`` runs on the loop
        as time is released, so nothing can slip in between."""
        self._holds += 1

        def release() -> None:
            self._holds -= 1
            if then is not None:
                then()

        def finished(_: object) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self.call_soon_threadsafe(release)

        future.add_done_callback(finished)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Stop time while the block awaits work outside the loop (a socket, a subprocess)."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1

    @contextlib.contextmanager
    def in_real_time(self) -> Iterator[None]:
        """Run virtual time at the wall clock's pace for the block.

        For waits on the outside world that polls and timeouts bound, such as a server
        process exiting: at full speed its grace period would be over before the process had
        a real chance to exit, while holding time would stop the polls that see it exit.
        """
        outer = self._anchor
        self._anchor = (time.perf_counter(), self._now)
        try:
            yield
        finally:
            self._anchor = outer

    def run_in_executor(  # type: ignore[override]
        self, executor: concurrent.futures.Executor | None, func: Callable[..., _T], *args: Any
    ) -> asyncio.Future[_T]:
        """As asyncio's, with the job held (``getaddrinfo`` and ``to_thread`` run here)."""
        future = super().run_in_executor(executor, func, *args)
        self.hold(future)
        return future

    def _select(self, timeout: float | None) -> _Events:
        # One empty poll is enough to call the sockets idle: a replay's sockets are Unix
        # sockets, whose write is in the peer's queue when ``send`` returns (cli/replaying.py).
        # A second poll, as a margin, cost a loop pass per 20 ms frame (3,500 of a 70 s
        # call's 20,600) and changed no timeline.
        ready = self._real_select(0)
        if ready or timeout == 0:
            return ready
        if self._holds:  # wait for the off-loop work on the wall clock; time stands still
            return self._real_select(HELD_WAIT_S)
        if timeout is None:  # no timer at all: only the outside world can wake the loop
            return self._real_select(None)
        return self._advance(timeout)

    def _advance(self, timeout: float) -> _Events:
        """Jump to the next timer, first waiting on the wall clock when a pace is set."""
        target = self._now + timeout
        due = self._wall_due(target)
        if due is not None:
            ready = self._real_select(max(0.0, due - time.perf_counter()))
            if ready:  # something came in while pacing: handle it before time moves
                return ready
        self._now = target
        return []

    def _wall_due(self, target: float) -> float | None:
        """When virtual ``target`` may be reached on the wall clock (None: at once)."""
        if self._anchor is not None:
            wall, virtual = self._anchor
            return wall + (target - virtual)
        if self._pace is not None:
            return self._wall_start + target / self._pace
        return None


def virtual_loop() -> VirtualTimeLoop | None:
    """The running loop if it runs on virtual time, else None (also outside any loop)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop if isinstance(loop, VirtualTimeLoop) else None


@contextlib.contextmanager
def holding() -> Iterator[None]:
    """Stop virtual time for the block (no effect on a real-time loop)."""
    loop = virtual_loop()
    if loop is None:
        yield
        return
    with loop.held():
        yield


@contextlib.contextmanager
def real_time() -> Iterator[None]:
    """Let virtual time run no faster than the wall clock for the block (no effect on a
    real-time loop)."""
    loop = virtual_loop()
    if loop is None:
        yield
        return
    with loop.in_real_time():
        yield


async def charge(component: str) -> None:
    """Wait the modelled latency of ``component`` in virtual time (no-op in real time)."""
    loop = virtual_loop()
    if loop is not None and (seconds := loop.latency.charge_s(component)) > 0:
        await asyncio.sleep(seconds)


async def offloaded(work: concurrent.futures.Future[_T], component: str) -> _T:
    """Await a thread's result; in virtual time it lands ``component``'s latency later."""
    return await asyncio.wrap_future(charged(work, component))


def charged(work: concurrent.futures.Future[_T], component: str) -> concurrent.futures.Future[_T]:
    """``work`` as a future that, in virtual time, is done ``component``'s latency after it
    was started (time stands still while the thread runs); ``work`` itself in real time.

    For results that are polled (``done()``) rather than awaited, like Smart Turn's.
    """
    loop = virtual_loop()
    if loop is None:
        return work
    due = loop.time() + loop.latency.charge_s(component)
    outer: concurrent.futures.Future[_T] = concurrent.futures.Future()
    outer.add_done_callback(lambda done: work.cancel() if done.cancelled() else None)

    def land() -> None:
        if outer.done():
            return
        if work.cancelled():
            outer.cancel()
        elif (error := work.exception()) is not None:
            outer.set_exception(error)
        else:
            outer.set_result(work.result())

    # Scheduled as time is released, so the result lands at ``due`` exactly, every run.
    loop.hold(work, then=lambda: loop.call_at(due, land))
    return outer


def run_virtual(
    main: Coroutine[Any, Any, _T], *, latency: LatencyModel | None = None, pace: float | None = None
) -> _T:
    """Run ``main`` to completion on a fresh :class:`VirtualTimeLoop`."""
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(latency, pace)) as runner:
        return runner.run(main)

"""The shared decode pool: bounded, finals before interims, slots never leak."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from voicegate.clock.virtual import LatencyModel, run_virtual
from voicegate.errors import SpeechError
from voicegate.speech.embedded.decode_pool import DecodePool
from voicegate.speech.embedded.utterance import UtteranceBuffer


async def hold(pool: DecodePool, order: list[str], name: str, urgent: bool) -> None:
    async with pool.slot(urgent=lambda: urgent) as lease:
        order.append(name)
        await lease.run(lambda: None)


async def test_a_waiting_final_gets_the_next_slot_before_earlier_interims() -> None:
    pool = DecodePool(1)
    order: list[str] = []
    release = asyncio.Event()

    async def first() -> None:
        async with pool.slot(urgent=lambda: False):
            await release.wait()

    holder = asyncio.ensure_future(first())
    await asyncio.sleep(0)
    waiters = [
        asyncio.ensure_future(hold(pool, order, "interim a", False)),
        asyncio.ensure_future(hold(pool, order, "interim b", False)),
        asyncio.ensure_future(hold(pool, order, "final c", True)),
    ]
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(holder, *waiters)
    assert order == ["final c", "interim a", "interim b"]
    pool.close()


async def test_at_most_size_decodes_run_at_once() -> None:
    pool = DecodePool(2)
    running, peak = 0, 0
    lock = threading.Lock()
    go = threading.Event()
    started = threading.Semaphore(0)

    def work() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        started.release()
        go.wait(5)
        with lock:
            running -= 1

    async def decode() -> None:
        async with pool.slot(urgent=lambda: False) as lease:
            await lease.run(work)

    tasks = [asyncio.ensure_future(decode()) for _ in range(5)]
    for _ in range(2):
        await asyncio.to_thread(started.acquire)
    go.set()
    await asyncio.gather(*tasks)
    assert peak == 2
    pool.close()


async def test_a_cancelled_decode_keeps_its_slot_until_its_thread_is_free() -> None:
    pool = DecodePool(1)
    gate, running = threading.Event(), threading.Event()

    def work() -> None:
        running.set()
        gate.wait(5)

    async def decode() -> None:
        async with pool.slot(urgent=lambda: False) as lease:
            await lease.run(work)

    first = asyncio.ensure_future(decode())
    await asyncio.to_thread(running.wait)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    second = asyncio.ensure_future(hold(pool, [], "next", False))
    await asyncio.sleep(0.01)
    assert not second.done()  # the thread is still busy with the cancelled call's audio
    gate.set()
    await second
    pool.close()


async def test_a_waiter_that_gives_up_does_not_take_a_slot() -> None:
    pool = DecodePool(1)
    release = asyncio.Event()

    async def first() -> None:
        async with pool.slot(urgent=lambda: False):
            await release.wait()

    holder = asyncio.ensure_future(first())
    await asyncio.sleep(0)
    quitter = asyncio.ensure_future(hold(pool, [], "quitter", False))
    await asyncio.sleep(0)
    quitter.cancel()
    release.set()
    await holder
    order: list[str] = []
    await hold(pool, order, "after", False)
    assert order == ["after"]
    pool.close()


@pytest.mark.parametrize("started", [True, False], ids=["start", "run"])
def test_on_virtual_time_a_decode_holds_the_clock_and_lands_its_modelled_latency_later(
    started: bool,
) -> None:
    # Issue 19: a decode that ran on the wall clock let a replay's media run on while it
    # decoded, so the same recording gave different timelines run after run.
    release = threading.Event()
    pool = DecodePool(1, name="whisper")

    def decode() -> str:
        release.wait(5)
        return "check my balance"

    async def main() -> tuple[str, float]:
        loop = asyncio.get_running_loop()
        threading.Timer(0.05, release.set).start()  # the decode takes 50 ms of wall time
        async with pool.slot(urgent=lambda: True) as lease:
            text = await (lease.start(decode) if started else lease.run(decode))
        return text, loop.time()

    text, landed = run_virtual(main(), latency=LatencyModel({"whisper": 360}))
    pool.close()
    assert (text, landed) == ("check my balance", pytest.approx(0.36))


def test_a_pool_needs_a_worker() -> None:
    with pytest.raises(SpeechError, match="at least 1"):
        DecodePool(0)


def frame(value: int) -> np.ndarray:
    return np.full(160, value, dtype=np.int16)  # 20 ms at 8 kHz


def test_the_buffer_keeps_pre_roll_and_cuts_an_endless_utterance() -> None:
    buffer = UtteranceBuffer(8000, preroll_ms=40, lookback_ms=0, max_ms=100)
    for n in range(1, 6):
        assert buffer.push(frame(n), n * 20) is None
    buffer.start(100)  # pre-roll: the frames ending after 60 ms
    assert buffer.duration_ms == 40
    assert buffer.push(frame(6), 120) is None
    assert buffer.push(frame(7), 140) is None
    cut = buffer.push(frame(8), 160)  # 100 ms reached
    assert cut is not None
    assert list(cut.samples[::160]) == [4, 5, 6, 7, 8]
    assert cut.end_ms == 160
    buffer.push(frame(9), 180)
    ended = buffer.end(190)
    assert ended is not None
    assert (list(ended.samples[::160]), ended.end_ms) == ([9], 190)
    assert buffer.end(200) is None
    assert not buffer.speaking

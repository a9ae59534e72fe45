"""The fake clock wakes sleepers in deadline order and only when advanced."""

import asyncio

import pytest

from voicegate.clock import FakeClock, MonotonicClock


async def test_fake_clock_wakes_sleepers_in_deadline_order() -> None:
    clock = FakeClock()
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(sleeper("late", 2.0))
        tasks.create_task(sleeper("early", 1.0))
        await asyncio.sleep(0)
        assert clock.pending_sleepers == 2
        clock.advance(0.5)
        await asyncio.sleep(0)
        assert woke == []
        clock.advance(1.0)
        await asyncio.sleep(0)
        assert woke == ["early"]
        clock.advance(1.0)
    assert woke == ["early", "late"]
    assert clock.now() == pytest.approx(2.5)


def test_fake_clock_refuses_to_go_backwards() -> None:
    with pytest.raises(ValueError, match="backwards"):
        FakeClock().advance(-1)


async def test_monotonic_clock_moves_forward() -> None:
    clock = MonotonicClock()
    before = clock.now()
    await clock.sleep(0)
    assert clock.now() >= before

"""Load shedding (gateway/overload.py): lateness past 50 ms over a window sets a call limit."""

from __future__ import annotations

import logging

import pytest

from voicegate.gateway.overload import LoadGuard
from voicegate.gateway.transport import CLOSE_TRY_AGAIN_LATER


class Clock:
    """Seconds that the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def feed(guard: LoadGuard, clock: Clock, lags_ms: list[float]) -> None:
    """Samples as the loop monitor takes them: each after a 10 ms sleep and its lateness."""
    for lag in lags_ms:
        clock.now += 0.01 + lag / 1000
        guard.record(lag)


def guard_on(clock: Clock, min_calls: int = 1) -> LoadGuard:
    return LoadGuard(0.15, min_calls=min_calls, clock=clock)


def test_a_loop_always_a_little_late_sheds_nothing() -> None:
    clock = Clock()
    guard = guard_on(clock)
    feed(guard, clock, [30, 45, 20, 40] * 100)  # late all the time, within the playout margin
    assert not guard.overloaded
    assert guard.refusal(200) is None
    assert guard.limit is None


def test_one_stall_sheds_nothing() -> None:
    clock = Clock()
    guard = guard_on(clock)
    feed(guard, clock, [1] * 50 + [250] + [1] * 50)  # a GC pass: 200 ms past the margin in 2 s
    assert not guard.overloaded
    assert guard.refusal(100) is None


def test_a_loop_that_stays_behind_caps_the_calls_at_90_percent_of_those_held() -> None:
    clock = Clock()
    guard = guard_on(clock)
    feed(guard, clock, [1, 120, 2, 300, 1, 180, 90, 400, 3, 150] * 3)
    assert guard.overloaded
    refusal = guard.refusal(100)
    assert refusal is not None
    assert refusal.code == CLOSE_TRY_AGAIN_LATER
    assert refusal.reason.startswith("overloaded: this worker carries 100 calls")
    assert guard.limit == 90
    assert guard.refusal(89) is None  # calls ended below the limit: the next one is taken
    assert guard.refusal(90) is not None


def test_the_limit_grows_back_while_the_loop_keeps_time() -> None:
    clock = Clock()
    guard = guard_on(clock)
    feed(guard, clock, [300] * 10)
    assert guard.refusal(100) is not None
    assert guard.limit == 90
    feed(guard, clock, [2] * 400)  # about 4.8 s of a loop on time
    assert not guard.overloaded
    assert guard.limit is not None
    assert 90 < guard.limit < 110  # a few 5 % steps, one per 2 s window at most
    assert guard.refusal(guard.limit - 1) is None


def test_the_limit_is_cut_once_per_window() -> None:
    clock = Clock()
    guard = guard_on(clock)
    feed(guard, clock, [300] * 10)
    assert guard.refusal(100) is not None
    assert guard.refusal(50) is None  # in the same window: no second cut to 45
    assert guard.limit == 90


def test_the_limit_never_falls_below_min_calls() -> None:
    clock = Clock()
    guard = guard_on(clock, min_calls=10)
    feed(guard, clock, [300] * 10)
    assert guard.overloaded
    assert guard.refusal(3) is None  # a worker late with 3 calls is not late because of them
    assert guard.limit == 10
    assert guard.refusal(10) is not None


def test_the_cut_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    guard = guard_on(clock)
    with caplog.at_level(logging.WARNING, logger="voicegate.gateway.overload"):
        feed(guard, clock, [300] * 10)
        guard.refusal(40)
    (message,) = [record.getMessage() for record in caplog.records]
    assert "with 40 calls" in message
    assert message.endswith("this worker now takes at most 36")

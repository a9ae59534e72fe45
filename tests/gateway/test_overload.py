"""Load shedding (gateway/overload.py): the media loop's median lag decides, with hysteresis."""

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


def feed(guard: LoadGuard, clock: Clock, lags_ms: list[float], every_s: float = 0.01) -> None:
    for lag in lags_ms:
        clock.now += every_s + lag / 1000
        guard.record(lag)


def test_single_stalls_shed_nothing_but_a_loop_that_stays_behind_does() -> None:
    clock = Clock()
    guard = LoadGuard(60.0, clock=clock)
    feed(guard, clock, [1, 2, 400, 1, 3, 250, 2, 1, 500, 2])  # GC passes, call-start bursts
    assert not guard.shedding
    assert guard.refusal() is None
    feed(guard, clock, [80, 95, 120, 70, 90, 110, 85, 100, 90, 75, 130])
    assert guard.shedding
    refusal = guard.refusal()
    assert refusal is not None
    assert refusal.code == CLOSE_TRY_AGAIN_LATER
    assert refusal.reason.startswith("overloaded: the media loop is ")


def test_shedding_stops_only_below_half_the_threshold() -> None:
    clock = Clock()
    guard = LoadGuard(60.0, clock=clock)
    feed(guard, clock, [100] * 20)
    assert guard.shedding
    feed(guard, clock, [45] * 200)  # under the threshold, above half of it: still shedding
    assert guard.shedding
    feed(guard, clock, [5] * 300)
    assert not guard.shedding


def test_old_samples_leave_the_window() -> None:
    clock = Clock()
    guard = LoadGuard(60.0, window_s=2.0, clock=clock)
    feed(guard, clock, [100] * 10)
    assert guard.shedding
    clock.now += 10.0  # a quiet spell with no samples at all (a stalled monitor excepted)
    feed(guard, clock, [1, 1, 1])
    assert not guard.shedding


def test_too_few_samples_decide_nothing() -> None:
    clock = Clock()
    guard = LoadGuard(60.0, clock=clock)
    feed(guard, clock, [900, 900])
    assert not guard.shedding


def test_starting_and_stopping_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    guard = LoadGuard(60.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="voicegate.gateway.overload"):
        feed(guard, clock, [100] * 5 + [1] * 400)
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith("the media loop is 100 ms behind")
    assert "refusing new calls until it is below 30 ms" in messages[0]
    assert messages[1].startswith("the media loop caught up")
    assert len(messages) == 2

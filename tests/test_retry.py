"""``call_retrying``: a blocking call retried within a ``RetryPolicy`` (the Redis store)."""

from __future__ import annotations

import logging
import random

import pytest

from voicegate.retry import RetryPolicy, call_retrying

POLICY = RetryPolicy(attempts=3, base_s=0.01, max_s=0.02, budget_s=1.0, rng=random.Random(1))


class Flaky:
    """Fails ``failures`` times with ``error``, then answers."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "ok"


def test_a_retryable_error_is_retried_with_waits_and_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    waits: list[float] = []
    flaky = Flaky(2, ConnectionError("refused"))
    with caplog.at_level(logging.WARNING, logger="voicegate.retry"):
        assert call_retrying(flaky, POLICY, (ConnectionError,), "op", waits.append) == "ok"
    assert flaky.calls == 3
    assert len(waits) == 2
    assert all(0 < wait <= 0.02 for wait in waits)
    assert "op failed (refused); attempt 2" in caplog.text


def test_the_last_error_is_raised_once_the_attempts_are_used() -> None:
    waits: list[float] = []
    flaky = Flaky(5, ConnectionError("refused"))
    with pytest.raises(ConnectionError):
        call_retrying(flaky, POLICY, (ConnectionError,), "op", waits.append)
    assert flaky.calls == 3


def test_the_budget_bounds_the_waits() -> None:
    tight = RetryPolicy(attempts=10, base_s=1.0, max_s=1.0, budget_s=0.3)
    flaky = Flaky(5, TimeoutError("slow"))
    with pytest.raises(TimeoutError):
        call_retrying(flaky, tight, (TimeoutError,), "op", lambda _: None)
    assert flaky.calls == 1  # the first wait (0.5-1 s with its jitter) would pass the budget


def test_other_errors_are_not_retried() -> None:
    flaky = Flaky(1, ValueError("bad"))
    with pytest.raises(ValueError, match="bad"):
        call_retrying(flaky, POLICY, (ConnectionError,), "op", lambda _: None)
    assert flaky.calls == 1

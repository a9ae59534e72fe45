"""The echo gate's fast paths give what the plain ones gave, bit for bit (issue 12).

Each fast path (the reference's sliding maximum, the caller level's dot products, the gate
state that keeps only evident frames) is driven next to a plain implementation written here,
the one it replaced, over long random sequences in the order the tracker makes its calls
(one media clock), and every answer must be the same float (or None), not merely close.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, replace

import numpy as np
import pytest

from voicegate.turns import echo_gate as gate
from voicegate.turns.settings import EchoGateSettings
from voicegate.types import MediaMs


class PlainReference:
    """The echo reference as a list scanned on every question (the implementation before)."""

    def __init__(self, max_delay_ms: int) -> None:
        self._max_delay_ms = max_delay_ms
        self._frames: deque[tuple[MediaMs, MediaMs, float]] = deque()
        self._cursor: MediaMs = 0

    def played(self, duration_ms: int, level: float, released_ms: MediaMs) -> None:
        start = max(self._cursor, released_ms)
        self._cursor = start + duration_ms
        self._frames.append((start, self._cursor, level))

    def flushed(self, now_ms: MediaMs) -> None:
        self._cursor = now_ms
        while self._frames and self._frames[-1][0] >= now_ms:
            self._frames.pop()

    def level_at(self, start_ms: MediaMs, end_ms: MediaMs) -> float | None:
        earliest = start_ms - self._max_delay_ms
        levels = [db for start, end, db in self._frames if start < end_ms and end > earliest]
        return max(levels, default=None)


#: Few distinct levels, so that equal levels (which may replace each other) come often.
LEVELS = (gate.SILENT_DB, -60.0, -40.0, -30.5, -30.0, -20.0, -10.0)


@pytest.mark.parametrize("seed", range(40))
def test_the_loudest_reference_is_the_plain_scans_answer(seed: int) -> None:
    rng = random.Random(seed)
    max_delay_ms = rng.choice((0, 20, 60, 300, 600))
    frame_ms = rng.choice((10, 20, 30))
    fast, plain = gate.EchoReference(max_delay_ms), PlainReference(max_delay_ms)
    asked_until = 0  # a flush is never dated before a window already asked about
    for tick in range(1, 3000):
        now = tick * frame_ms
        for _ in range(rng.choice((0, 0, 0, 1, 1, 5))):  # a playout chunk in 20 ms frames
            duration = rng.choice((20, 20, 20, 10, 5, 0))
            level = rng.choice(LEVELS)
            released = now - rng.choice((0, 0, 0, 50, 400))
            fast.played(duration, level, released)
            plain.played(duration, level, released)
        if rng.random() < 0.9:  # the tracker asks on every caller frame; a gap now and then
            assert fast.level_at(now - frame_ms, now) == plain.level_at(now - frame_ms, now)
            asked_until = now
        if rng.random() < 0.04:  # a barge-in: the provider is flushed, now or a little later
            at = max(asked_until, now + rng.choice((0, 0, 3, frame_ms - 1)))
            fast.flushed(at)
            plain.flushed(at)


def plain_ac_level_db(samples: np.ndarray) -> float:
    """The caller frame's level less its mean, as it was taken before."""
    if not len(samples):
        return gate.SILENT_DB
    values = samples.astype(np.float32)
    mean = float(values.sum()) / len(values)
    mean_square = float(np.dot(values, values)) / len(values) - mean * mean
    if mean_square <= 0.0:
        return gate.SILENT_DB
    return max(gate.SILENT_DB, 10.0 * math.log10(mean_square / 32768.0**2))


@pytest.mark.parametrize("length", [0, 1, 7, 80, 160, 320, 511, 512, 513, 960])
def test_the_caller_level_is_the_plain_one_bit_for_bit(length: int) -> None:
    rng = np.random.default_rng(length)
    for scale in (0.0, 1.0, 3.0, 30.0, 300.0, 3000.0, 30000.0):
        for offset in (0, 5, -800, 800, 20000, -32768):
            noise = rng.standard_normal(length) * scale + offset
            samples = np.clip(np.round(noise), -32768, 32767).astype(np.int16)
            assert gate.ac_level_db(samples) == plain_ac_level_db(samples)
    for extreme in (-32768, 32767):  # the largest sums of all
        samples = np.full(length, extreme, dtype=np.int16)
        assert gate.ac_level_db(samples) == plain_ac_level_db(samples)
        samples[::2] = -1 - extreme
        assert gate.ac_level_db(samples) == plain_ac_level_db(samples)


@dataclass(frozen=True, slots=True)
class PlainState:
    """The gate's state as it was: every recent frame, evident or not."""

    recent: tuple[tuple[MediaMs, bool], ...] = ()
    held: gate.Held | None = None
    last_echo_ms: MediaMs | None = None
    frame_ms: int = 20


def plain_frame(
    state: PlainState,
    start_ms: MediaMs,
    evident: bool,
    echo_possible: bool,
    settings: EchoGateSettings,
    keep_ms: int,
    frame_ms: int,
) -> tuple[PlainState, gate.Start | None]:
    recent = tuple(frame for frame in state.recent if frame[0] > start_ms - keep_ms)
    last_echo_ms = start_ms if echo_possible else state.last_echo_ms
    state = PlainState((*recent, (start_ms, evident)), state.held, last_echo_ms, frame_ms)
    return plain_release(state, settings)


def plain_started(
    state: PlainState, onset_ms: MediaMs, settings: EchoGateSettings
) -> tuple[PlainState, gate.Start | None]:
    if not settings.enabled or state.last_echo_ms is None or state.last_echo_ms < onset_ms:
        return replace(state, held=gate.Held(onset_ms, released=True)), gate.Start(onset_ms)
    return plain_release(replace(state, held=gate.Held(onset_ms)), settings)


def plain_ended(state: PlainState, end_ms: MediaMs) -> tuple[PlainState, gate.End | None]:
    held = state.held
    passed = held is not None and held.released
    return replace(state, held=None), gate.End(end_ms) if passed else None


def plain_release(
    state: PlainState, settings: EchoGateSettings
) -> tuple[PlainState, gate.Start | None]:
    held = state.held
    if held is None or held.released:
        return state, None
    evident = [start for start, ok in state.recent if ok and start >= held.onset_ms]
    if len(evident) * state.frame_ms < max(settings.evidence_ms, state.frame_ms):
        return state, None
    return replace(state, held=replace(held, released=True)), gate.Start(evident[0])


@pytest.mark.parametrize("seed", range(40))
def test_the_gate_decides_as_the_plain_one(seed: int) -> None:
    rng = random.Random(seed)
    settings = EchoGateSettings(evidence_ms=rng.choice((0, 20, 40, 100)))
    keep_ms = rng.choice((0, 100, 400))
    frame_ms = rng.choice((10, 20))
    fast, plain = gate.EchoGateState(), PlainState()
    evident_odds = rng.choice((0.05, 0.3, 0.8))
    for tick in range(3000):
        start = tick * frame_ms
        evident, possible = rng.random() < evident_odds, rng.random() < 0.7
        fast, released = gate.frame(fast, start, evident, possible, settings, keep_ms, frame_ms)
        plain, expected = plain_frame(plain, start, evident, possible, settings, keep_ms, frame_ms)
        assert released == expected
        if rng.random() < 0.05:  # the VAD dates its onsets back, up to the kept frames
            onset = start - rng.randrange(0, keep_ms + 2 * frame_ms, 5)
            fast, began = gate.speech_started(fast, onset, settings)
            plain, expected = plain_started(plain, onset, settings)
            assert began == expected
        elif rng.random() < 0.05:
            fast, ended = gate.speech_ended(fast, start)
            plain, expected_end = plain_ended(plain, start)
            assert ended == expected_end
        assert (fast.held, fast.last_echo_ms) == (plain.held, plain.last_echo_ms)

"""The echo gate: VAD speech that the bot's own voice coming back explains is not the caller.

Issue 14 §4. The gateway knows what it played and when (playout releases bot audio on media
time, and the provider plays it in order). :class:`EchoReference` keeps the level of every
20 ms of released bot audio (:data:`REFERENCE_FRAME_MS`, whatever the playout's chunk size)
at the time the caller plays it; a caller frame is *evident* when it is louder than the
loudest 20 ms of bot audio in the last ``max_delay_ms`` minus ``margin_db`` (an echo is the
bot's audio attenuated by the line's echo return loss, so it stays below that).

The gate is pure (``step`` functions on frozen state, media time only): a VAD speech start
while the bot could be echoing is held until ``evidence_ms`` of evident audio has been seen
since its onset, then passed on dated at the first evident frame; a held segment that ends
without evidence is dropped with its end. While no bot audio is in the window every frame is
evident and the gate passes events through unchanged.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from voicegate.audio.pcm import Samples
from voicegate.turns.settings import EchoGateSettings
from voicegate.types import MediaMs

SILENT_DB = -120.0
_FLOAT32 = np.dtype(np.float32)  # an object: no scalar-type conversion per frame
#: A float32 sum of this many PCM16 samples or fewer is exact in any order (every partial
#: sum is a whole number of at most 512 * 32768 = 2**24): read-only ones to take it with.
_ONES = np.ones(512, dtype=_FLOAT32)
_ONES.flags.writeable = False

#: The bot audio's level is kept per this much audio. A level per playout chunk (100 ms) is
#: the chunk's average: a loud syllable next to a pause in the same chunk read ~5 dB quieter
#: than it is, and its echo at -10 dB then passed the 6 dB margin as the caller
#: (bench/turn_taking.py, echo at -10 dB and 100 ms: 6 false barge-ins in 5 calls).
REFERENCE_FRAME_MS = 20


def level_db(samples: Samples) -> float:
    """RMS level of PCM16 samples in dBFS (``SILENT_DB`` for digital silence)."""
    if not len(samples):
        return SILENT_DB
    values = samples.astype(_FLOAT32)  # a float32 dot: a few µs per 20 ms frame
    return _dbfs(float(np.dot(values, values)) / len(values))


def ac_level_db(samples: Samples) -> float:
    """:func:`level_db` of ``samples`` less their mean: a DC offset on the line is no sound.

    The caller's frames are judged by this one: an 800 LSB offset (-32 dBFS; cheap sound
    cards, vad/dc.py) under a -35 dBFS-peak talker put every frame at the offset's level,
    which the gate took for the echo, and every barge-in was missed
    (bench/line_conditions.py, quiet_-35+dc_800+loss_zero_3pct). The per-frame mean is
    enough here (the VAD tracks the offset more finely, and the two layers share no code).
    """
    count = len(samples)
    if not count:
        return SILENT_DB
    values = samples.astype(_FLOAT32)
    # The sum as a dot product with ones: 0.24 µs against 0.7 for ``values.sum()`` on a
    # 20 ms frame (timeit), and the same float, both being exact (_ONES). The power stays a
    # float32 dot, rounding and all: the gate's decisions rest on these levels.
    total = values.dot(_ONES[:count]) if count <= len(_ONES) else np.add.reduce(values)
    mean = float(total) / count
    return _dbfs(float(values.dot(values)) / count - mean * mean)


def levels_db(samples: Samples, frame: int) -> list[float]:
    """:func:`level_db` of each ``frame`` samples of ``samples`` (the last piece may be short)."""
    whole = len(samples) // frame * frame
    pieces = samples[:whole].astype(_FLOAT32).reshape(-1, frame)
    mean_squares = np.einsum("ij,ij->i", pieces, pieces) / frame
    levels = [_dbfs(square) for square in mean_squares.tolist()]
    if whole < len(samples):
        levels.append(level_db(samples[whole:]))
    return levels


def _dbfs(mean_square: float) -> float:
    """A PCM16 mean square in dBFS (``SILENT_DB`` for digital silence)."""
    if mean_square <= 0.0:
        return SILENT_DB
    level = 10.0 * math.log10(mean_square / 32768.0**2)
    return level if level > SILENT_DB else SILENT_DB  # max() as a test: a builtin call less


class EchoReference:
    """Levels of the bot audio as the caller plays it, for the last ``max_delay_ms``.

    Asked once per caller frame while the bot may echo, so the loudest level is kept as a
    sliding-window maximum (amortised O(1) a question, against a loop over the ~30 frames of
    a 600 ms window: 13 % of a busy worker's media loop, py-spy at 150 calls). Frames wait in
    ``_pending`` until a question's window reaches their start; then they join ``_window``,
    where a frame is dropped as soon as a louder (or as loud) one that plays on at least as
    long has joined: it can never be the loudest again. In ``_window`` the frames' ends are in
    order and their levels fall, so the loudest still playing is the first. The ends stay in
    order because a frame starts at or after the cursor, past every end kept; a flush moves
    the cursor back, and the frames still playing past it go apart (``_flushed_tails``).

    Calls come in media-time order on one clock (the session's): the windows asked about
    never move back, and :meth:`flushed` is never dated before the end of a window already
    asked about, so a flush only drops frames that have not joined ``_window`` and dominated
    nothing (no loudest frame is lost and none has to come back).
    """

    def __init__(self, max_delay_ms: int) -> None:
        self._max_delay_ms = max_delay_ms
        #: (start, end, dB) of frames released but not yet reached by a window, in order.
        self._pending: deque[tuple[MediaMs, MediaMs, float]] = deque()
        #: Frames reached by a window that may still be the loudest: ends in order, dB falling.
        self._window: deque[tuple[MediaMs, MediaMs, float]] = deque()
        #: Frames still playing when the provider was flushed: they may end after frames
        #: released later, so they are judged apart, one by one (rare: one per flush, or two).
        self._flushed_tails: list[tuple[MediaMs, MediaMs, float]] = []
        self._cursor: MediaMs = 0  # where the provider's buffer will have played out

    def played(self, duration_ms: int, level: float, released_ms: MediaMs) -> None:
        """Bot audio of ``duration_ms`` at ``level`` dBFS was released at ``released_ms``."""
        start = released_ms if released_ms > self._cursor else self._cursor
        self._cursor = start + duration_ms
        self._pending.append((start, self._cursor, level))

    def flushed(self, now_ms: MediaMs) -> None:
        """The provider dropped its buffer: nothing released so far plays after ``now_ms``."""
        self._cursor = now_ms
        pending, window = self._pending, self._window
        while pending and pending[-1][0] >= now_ms:
            pending.pop()
        # What was released from now on starts at ``now_ms``: a frame still playing past it
        # (ends in order: a suffix) would break the order of ends, and goes apart.
        for frames in (pending, window):
            while frames and frames[-1][1] > now_ms:
                self._flushed_tails.append(frames.pop())

    def level_at(self, start_ms: MediaMs, end_ms: MediaMs) -> float | None:
        """Loudest bot audio playing in ``[start_ms - max_delay_ms, end_ms)``; None if none."""
        pending, window = self._pending, self._window
        while pending and pending[0][0] < end_ms:  # starts in order: a prefix joins
            joining = pending.popleft()
            level = joining[2]
            while window and window[-1][2] <= level:  # ends no later: never the loudest again
                window.pop()
            window.append(joining)
        earliest = start_ms - self._max_delay_ms
        while window and window[0][1] <= earliest:
            window.popleft()
        loudest = window[0][2] if window else None
        if self._flushed_tails:
            return self._with_flushed_tails(loudest, earliest, end_ms)
        return loudest

    def _with_flushed_tails(
        self, loudest: float | None, earliest: MediaMs, end_ms: MediaMs
    ) -> float | None:
        """``loudest``, or a louder frame among those kept apart at a flush."""
        self._flushed_tails = [frame for frame in self._flushed_tails if frame[1] > earliest]
        for start, _, level in self._flushed_tails:
            if start < end_ms and (loudest is None or level > loudest):
                loudest = level
        return loudest


class EchoLoss:
    """How far below the bot's audio its echo comes back on this call (dB), measured.

    Observed on caller frames while the bot's audio is in the window and no caller speech was
    let through: the gap between the reference and the frame's level; a frame at or below
    ``SILENT_FLOOR_DB`` shows no echo and counts as ``NO_ECHO_DB``. The margin is the loudest
    tenth of the echo less ``SAFETY_DB``, between the configured ``margin_db`` and
    ``max_margin_db``: a line without echo gets a permissive gate, a loud speakerphone a
    strict one.

    A frame joins the measurement ``LAG_MS`` after it was seen, and the frames of a VAD
    segment the gate holds wait for its verdict (:meth:`hold`): they join if the segment ends
    as echo (:meth:`echo`) and are dropped if it is let through (:meth:`caller`). Measured at
    once, a quiet caller's own first frames (the VAD finds a -45 dBFS talker ~200 ms after
    the onset, and dates the onset late) counted as the line's echo and narrowed the margin
    under that very caller (bench/line_conditions.py, quiet_-45dBFS, "cards-002": 44 to 36 dB,
    the barge-in missed).
    """

    FRAMES = 150  # 3 s of 20 ms frames
    MIN_FRAMES = 25  # 0.5 s before the measurement is trusted
    SAFETY_DB = 6.0
    #: About the quietest a G.711 frame gets short of digital silence (one μ-law step, ~8
    #: LSB: -72 dBFS): no echo is seen below it.
    SILENT_FLOOR_DB = -70.0
    #: The gap a frame that shows no echo counts as: past any margin. It used to be the
    #: reference less the floor (-60 then), so an echo-free line measured ~37 dB with
    #: espeak-ng at -17 dBFS, and less while the bot's audio was starting (a quiet or silent
    #: reference), short of the 40-45 dB a -45 dBFS-peak talker's loudest frames sit below
    #: the bot: it could not interrupt (docs/turn-taking.md, "Real phone lines").
    NO_ECHO_DB = 100.0
    #: How long a frame waits before it counts as echo: the VAD's detection delay on quiet
    #: speech plus how far before its dated onset that speech began (the gate's 400 ms).
    LAG_MS = 400

    #: The 10th percentile is recomputed every this many observed frames (200 ms), not every
    #: frame: over a 3 s window it barely moves, and a per-frame percentile cost ~14 % of a
    #: busy worker's media loop (py-spy, bench/calls.py at 60 calls).
    REFRESH_FRAMES = 10

    def __init__(self) -> None:
        self._gaps: deque[float] = deque(maxlen=self.FRAMES)
        self._starts: deque[MediaMs] = deque(maxlen=self.FRAMES)  # each gap's frame start
        #: Frames seen but not yet measured, oldest first: (start, gap).
        self._pending: deque[tuple[MediaMs, float]] = deque(maxlen=self.FRAMES)
        self._holding = False
        self._loudest: float | None = None
        self._stale = 0

    def observe(self, start_ms: MediaMs, level: float, reference: float) -> None:
        """A caller frame while the bot's audio may echo and nobody was let through."""
        pending = self._pending
        gap = self.NO_ECHO_DB if level <= self.SILENT_FLOOR_DB else reference - level
        pending.append((start_ms, gap))
        if self._holding:
            return
        while pending[0][0] <= start_ms - self.LAG_MS:  # the frame just added stays
            seen_ms, seen_gap = pending.popleft()
            self._gaps.append(seen_gap)
            self._starts.append(seen_ms)
            self._stale += 1

    def hold(self, onset_ms: MediaMs) -> None:
        """The gate holds a VAD segment from ``onset_ms``: its frames wait for the verdict."""
        self._holding = True
        while self._starts and self._starts[-1] >= onset_ms:  # newest last: a suffix
            self._pending.appendleft((self._starts.pop(), self._gaps.pop()))
            self._loudest = None  # recomputed without them

    def caller(self) -> None:
        """The held segment was let through: the frames not measured yet were the caller."""
        self._holding = False
        self._pending.clear()

    def echo(self) -> None:
        """The held segment ended without evidence: its frames count as echo, in turn."""
        self._holding = False

    def margin(self, settings: EchoGateSettings) -> float:
        """The margin to test caller frames with now."""
        if len(self._gaps) < self.MIN_FRAMES:
            return settings.margin_db
        if self._loudest is None or self._stale >= self.REFRESH_FRAMES:
            self._loudest = tenth_percentile(self._gaps)
            self._stale = 0
        return min(settings.max_margin_db, max(settings.margin_db, self._loudest - self.SAFETY_DB))


def tenth_percentile(values: Iterable[float]) -> float:
    """``numpy.percentile(values, 10)`` (its default, linear method), bit for bit.

    On the 150 gaps :class:`EchoLoss` keeps, sorting in Python is ~5x cheaper than the numpy
    call's array set-up (bench/media_cost.py); the interpolation is numpy's ``_lerp``, so the
    margin does not move by an ulp (tests/turns/test_echo_gate.py compares the two).
    """
    ordered = sorted(values)
    virtual = (len(ordered) - 1) * (10 / 100)  # numpy's 'linear' virtual index
    below = math.floor(virtual)
    fraction = virtual - below
    low, high = ordered[below], ordered[min(below + 1, len(ordered) - 1)]
    step = high - low
    if fraction >= 0.5:
        return high - step * (1 - fraction)
    return low + step * fraction


@dataclass(frozen=True, slots=True)
class Held:
    """A VAD speech start not yet shown to be the caller."""

    onset_ms: MediaMs
    released: bool = False


class EchoGateState(NamedTuple):
    """Recent frames' evidence and the segment being judged.

    A named tuple rather than a frozen dataclass: a new state is made on every frame the bot
    may echo, and a tuple is built in a third of the time (0.1 against 0.3 µs, timeit).
    """

    #: Starts of the evident frames a VAD onset may be dated back over, oldest first (the
    #: frames that are not evident count for nothing, and the tuple stays empty while the
    #: echo alone is heard).
    evident: tuple[MediaMs, ...] = ()
    held: Held | None = None
    #: Start of the latest frame the bot's audio could have echoed into (None: never).
    last_echo_ms: MediaMs | None = None
    #: Length of the caller's frames: the evidence is counted in them.
    frame_ms: int = 20


@dataclass(frozen=True, slots=True)
class Start:
    """Pass a speech start on, with this onset."""

    onset_ms: MediaMs


@dataclass(frozen=True, slots=True)
class End:
    """Pass a speech end on."""

    end_ms: MediaMs


GateOutput = Start | End


def frame(
    state: EchoGateState,
    start_ms: MediaMs,
    evident: bool,
    echo_possible: bool,
    settings: EchoGateSettings,
    keep_ms: int = 400,
    frame_ms: int = 20,
) -> tuple[EchoGateState, Start | None]:
    """One caller frame's verdict; a held start may be released by it."""
    # Only the evident frames are kept: while the echo alone is heard there are none, and
    # the tuple is neither copied nor rebuilt (it was ~20 entries rebuilt on every frame).
    kept = state.evident
    cutoff = start_ms - keep_ms
    if kept and kept[0] <= cutoff:  # oldest first: drop a prefix
        old = 1
        while old < len(kept) and kept[old] <= cutoff:
            old += 1
        kept = kept[old:]
    if evident:
        kept = (*kept, start_ms)
    last_echo_ms = start_ms if echo_possible else state.last_echo_ms
    return _maybe_release(EchoGateState(kept, state.held, last_echo_ms, frame_ms), settings)


def speech_started(
    state: EchoGateState, onset_ms: MediaMs, settings: EchoGateSettings
) -> tuple[EchoGateState, Start | None]:
    """The VAD detected speech from ``onset_ms``: pass it, or hold it while echo may explain it."""
    if not settings.enabled or state.last_echo_ms is None or state.last_echo_ms < onset_ms:
        return state._replace(held=Held(onset_ms, released=True)), Start(onset_ms)
    return _maybe_release(state._replace(held=Held(onset_ms)), settings)


def speech_ended(state: EchoGateState, end_ms: MediaMs) -> tuple[EchoGateState, End | None]:
    """The VAD declared the end: passed on only if its start was."""
    held = state.held
    state = state._replace(held=None)
    return state, End(end_ms) if held is not None and held.released else None


def _maybe_release(
    state: EchoGateState, settings: EchoGateSettings
) -> tuple[EchoGateState, Start | None]:
    held = state.held
    if held is None or held.released:
        return state, None
    evident = [start for start in state.evident if start >= held.onset_ms]
    frame_ms = state.frame_ms
    if len(evident) * frame_ms < max(settings.evidence_ms, frame_ms):
        return state, None
    return state._replace(held=replace(held, released=True)), Start(evident[0])

"""A running noise floor: the quietest recent frame level, to tell sound from background."""

from __future__ import annotations

from collections import deque

from voicegate.errors import ConfigError


class NoiseFloor:
    """Tracks the minimum frame level over the last ``window_frames`` frames.

    Minimum tracking follows the background as it drifts, while speech (which keeps dipping
    between syllables) cannot lift it: a sound counts as a rise only against what was quiet
    within the last window.

    Kept as a monotonic queue (levels that can still become the minimum, rising from the
    front), so each frame costs O(1) instead of a ``min`` over the whole window: it runs on
    every frame of every call (bench/media_cost.py).
    """

    def __init__(self, window_frames: int) -> None:
        if window_frames < 1:
            raise ConfigError(f"the noise floor needs a window of >= 1 frame, got {window_frames}")
        self._window = window_frames
        self._frame = 0
        self._candidates: deque[tuple[int, float]] = deque()  # (frame number, level)

    def update(self, level_db: float) -> float:
        """Record one frame's level and return the floor including it."""
        candidates = self._candidates
        while candidates and candidates[-1][1] >= level_db:
            candidates.pop()  # never the minimum again while this newer, lower level stays
        candidates.append((self._frame, level_db))
        if candidates[0][0] <= self._frame - self._window:
            candidates.popleft()  # fell out of the window
        self._frame += 1
        return candidates[0][1]

    def rises(self, level_db: float, rise_db: float) -> bool:
        """Record one frame's level; True when it stands ``rise_db`` or more above the floor."""
        return level_db >= self.update(level_db) + rise_db

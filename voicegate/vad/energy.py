"""A running noise floor: the quietest recent frame level, to tell sound from background."""

from __future__ import annotations

from collections import deque

from voicegate.errors import ConfigError


class NoiseFloor:
    """Tracks the minimum frame level over the last ``window_frames`` frames.

    Minimum tracking follows the background as it drifts, while speech (which keeps dipping
    between syllables) cannot lift it: a sound counts as a rise only against what was quiet
    within the last window.
    """

    def __init__(self, window_frames: int) -> None:
        if window_frames < 1:
            raise ConfigError(f"the noise floor needs a window of >= 1 frame, got {window_frames}")
        self._levels: deque[float] = deque(maxlen=window_frames)

    def update(self, level_db: float) -> float:
        """Record one frame's level and return the floor including it."""
        self._levels.append(level_db)
        return min(self._levels)

    def rises(self, level_db: float, rise_db: float) -> bool:
        """Record one frame's level; True when it stands ``rise_db`` or more above the floor."""
        return level_db >= self.update(level_db) + rise_db

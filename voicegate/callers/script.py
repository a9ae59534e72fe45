"""What an emulated caller says and when: cues placed at fixed times or after bot speech.

A cue is a recording placed either at a fixed media time, or a delay after the n-th time
the bot started speaking as the caller heard it ("0.8 s after the bot starts speaking"), which
is how a barge-in is staged. Between cues the caller is silent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from voicegate.audio.pcm import Samples, silence
from voicegate.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Cue:
    """One recording the caller plays, and when."""

    samples: Samples
    at_ms: int | None = None  # a fixed media time, or
    after_bot_speech: int | None = None  # the n-th bot speech start (1 = first) ...
    delay_ms: int = 0  # ... plus this delay
    label: str = ""
    transcript: str = ""

    def __post_init__(self) -> None:
        if (self.at_ms is None) == (self.after_bot_speech is None):
            raise ConfigError(f"cue {self.label!r}: give exactly one of at_ms, after_bot_speech")


class CallerScript:
    """The caller's cues at one sample rate; resolves relative cues as the call unfolds."""

    def __init__(self, cues: Sequence[Cue], sample_rate: int, *, tail_ms: int = 3000) -> None:
        self.cues = tuple(cues)
        self.sample_rate = sample_rate
        self.tail_ms = tail_ms
        self._starts: dict[int, int] = {}  # cue index -> start time in ms, once known

    def start_of(self, index: int, bot_started_ms: Sequence[int]) -> int | None:
        """When cue ``index`` starts, if that is known yet."""
        cue = self.cues[index]
        if cue.at_ms is not None:
            return cue.at_ms
        assert cue.after_bot_speech is not None
        if len(bot_started_ms) < cue.after_bot_speech:
            return None
        return bot_started_ms[cue.after_bot_speech - 1] + cue.delay_ms

    def frame(self, now_ms: int, frame_ms: int, bot_started_ms: Sequence[int]) -> Samples:
        """The caller's audio for the frame starting at ``now_ms``."""
        count = self.sample_rate * frame_ms // 1000
        for index, cue in enumerate(self.cues):
            start = self.start_of(index, bot_started_ms)
            if start is None or now_ms < start:
                continue
            offset = (now_ms - start) * self.sample_rate // 1000
            if offset < len(cue.samples):
                chunk = cue.samples[offset : offset + count]
                return np.concatenate([chunk, silence(count - len(chunk))])
        return silence(count)

    def finished(self, now_ms: int, bot_started_ms: Sequence[int], deadline_ms: int) -> bool:
        """True once every cue has played and the tail has passed (or the deadline)."""
        if now_ms >= deadline_ms:
            return True
        ends = []
        for index, cue in enumerate(self.cues):
            start = self.start_of(index, bot_started_ms)
            if start is None:
                return False
            ends.append(start + len(cue.samples) * 1000 // self.sample_rate)
        return now_ms >= max(ends, default=0) + self.tail_ms

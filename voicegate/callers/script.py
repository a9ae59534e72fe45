"""What an emulated caller says and when: cues placed at fixed times or after bot speech.

A cue is a recording placed either at a fixed media time, or a delay after the n-th time
the bot started speaking as the caller heard it ("0.8 s after the bot starts speaking"), which
is how a barge-in is staged. Between cues the caller is silent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
        self._lengths_ms = [len(cue.samples) * 1000 // sample_rate for cue in self.cues]
        # A caller asks whether it is done every 20 ms tick: until the fixed cues have played
        # and the tail passed it is not, whatever the relative cues do (see :meth:`finished`).
        fixed = [
            cue.at_ms + length
            for cue, length in zip(self.cues, self._lengths_ms, strict=True)
            if cue.at_ms is not None
        ]
        self._busy_until_ms = max(fixed, default=0) + tail_ms

    def start_of(self, index: int, bot_started_ms: Sequence[int]) -> int | None:
        """When cue ``index`` starts, if that is known yet."""
        cue = self.cues[index]
        if cue.at_ms is not None:
            return cue.at_ms
        assert cue.after_bot_speech is not None
        if len(bot_started_ms) < cue.after_bot_speech:
            return None
        return bot_started_ms[cue.after_bot_speech - 1] + cue.delay_ms

    def playing(self, now_ms: int, bot_started_ms: Sequence[int]) -> tuple[int, int] | None:
        """The cue that plays at ``now_ms`` (the first listed, if several) and the offset of
        ``now_ms`` into it in samples; None while the caller is silent."""
        for index, cue in enumerate(self.cues):
            start = self.start_of(index, bot_started_ms)
            if start is None or now_ms < start:
                continue
            offset = (now_ms - start) * self.sample_rate // 1000
            if offset < len(cue.samples):
                return index, offset
        return None

    def frame(self, now_ms: int, frame_ms: int, bot_started_ms: Sequence[int]) -> Samples:
        """The caller's audio for the frame starting at ``now_ms``."""
        count = self.sample_rate * frame_ms // 1000
        if (playing := self.playing(now_ms, bot_started_ms)) is None:
            return silence(count)
        index, offset = playing
        chunk = self.cues[index].samples[offset : offset + count]
        return np.concatenate([chunk, silence(count - len(chunk))])

    def finished(self, now_ms: int, bot_started_ms: Sequence[int], deadline_ms: int) -> bool:
        """True once every cue has played and the tail has passed (or the deadline)."""
        if now_ms >= deadline_ms:
            return True
        if now_ms < self._busy_until_ms:
            return False
        ends = []
        for index, length in enumerate(self._lengths_ms):
            start = self.start_of(index, bot_started_ms)
            if start is None:
                return False
            ends.append(start + length)
        return now_ms >= max(ends, default=0) + self.tail_ms


class EncodedScript:
    """A script's 20 ms frames in one wire encoding, each cue encoded once, not every frame.

    For sample-wise encodings (G.711, L16): a slice of the encoded cue is the encoding of
    the slice, so a frame is the same bytes either way; silence is a constant frame.
    """

    def __init__(
        self, script: CallerScript, encode: Callable[[Samples], bytes], frame_ms: int
    ) -> None:
        self._script = script
        self._encode = encode
        self._count = script.sample_rate * frame_ms // 1000
        self._width = len(encode(silence(1)))  # bytes per sample
        self.silent_frame = encode(silence(self._count))
        self._cues: dict[int, bytes] = {}  # cue index -> the whole cue, encoded

    def frame(self, now_ms: int, bot_started_ms: Sequence[int]) -> bytes:
        """The caller's encoded audio for the frame starting at ``now_ms``."""
        if (playing := self._script.playing(now_ms, bot_started_ms)) is None:
            return self.silent_frame
        index, offset = playing
        if (encoded := self._cues.get(index)) is None:
            encoded = self._cues[index] = self._encode(self._script.cues[index].samples)
        chunk = encoded[offset * self._width : (offset + self._count) * self._width]
        return chunk + self.silent_frame[len(chunk) :]

"""The caller audio an embedded recogniser decodes: the utterance the VAD cut, with pre-roll.

Pure and synchronous. Between utterances the last ``history_ms`` of frames are kept, because
the VAD declares speech some frames after it began (its onset is dated back) and a word's
first sound is quieter than the threshold: at ``start(onset_ms)`` the utterance begins
``preroll_ms`` before the onset. An utterance longer than ``max_ms`` (Whisper's 30 s window)
is cut there and goes on as a new segment, so a caller who never pauses still gets finals and
the buffer stays bounded.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from voicegate.audio.pcm import Samples
from voicegate.errors import SpeechError
from voicegate.types import MediaMs


@dataclass(frozen=True, slots=True)
class Segment:
    """Audio of (part of) one utterance, ending at media time ``end_ms``."""

    samples: Samples
    end_ms: MediaMs


@dataclass(frozen=True, slots=True)
class _Frame:
    samples: Samples
    end_ms: MediaMs


class UtteranceBuffer:
    """Frames of the current utterance, or of the recent past while nobody speaks."""

    def __init__(
        self,
        sample_rate: int,
        *,
        preroll_ms: int = 300,
        lookback_ms: int = 500,
        max_ms: int = 30000,
    ) -> None:
        if min(preroll_ms, lookback_ms) < 0 or max_ms <= 0:
            raise SpeechError("utterance buffer: negative pre-roll or look-back, or no max length")
        self._rate = sample_rate
        self._preroll_ms = preroll_ms
        self._history_ms = preroll_ms + lookback_ms
        self._max_samples = sample_rate * max_ms // 1000
        self._history: deque[_Frame] = deque()
        self._frames: list[_Frame] = []
        self._length = 0
        self._speaking = False

    @property
    def speaking(self) -> bool:
        """Whether an utterance is open."""
        return self._speaking

    @property
    def duration_ms(self) -> int:
        """Length of the open utterance's audio so far (0 between utterances)."""
        return self._length * 1000 // self._rate

    def push(self, frame: Samples, end_ms: MediaMs) -> Segment | None:
        """Keep one frame; a segment when the open utterance just reached its maximum length."""
        if not self._speaking:
            self._remember(_Frame(frame, end_ms))
            return None
        self._frames.append(_Frame(frame, end_ms))
        self._length += len(frame)
        if self._length < self._max_samples:
            return None
        segment = self._segment(end_ms)
        self._frames, self._length = [], 0
        return segment

    def start(self, onset_ms: MediaMs) -> None:
        """Open an utterance starting ``preroll_ms`` before ``onset_ms`` (no-op if open)."""
        if self._speaking:
            return
        begin = onset_ms - self._preroll_ms
        self._frames = [f for f in self._history if f.end_ms > begin]
        self._length = sum(len(f.samples) for f in self._frames)
        self._history.clear()
        self._speaking = True

    def end(self, end_ms: MediaMs) -> Segment | None:
        """Close the utterance: its audio so far (None if none was open)."""
        if not self._speaking:
            return None
        segment = self._segment(end_ms)
        self._frames, self._length = [], 0
        self._speaking = False
        return segment

    def snapshot(self) -> Segment | None:
        """The open utterance's audio so far, for an interim transcript."""
        if not self._speaking or not self._frames:
            return None
        return self._segment(self._frames[-1].end_ms)

    def _segment(self, end_ms: MediaMs) -> Segment:
        samples = (
            np.concatenate([f.samples for f in self._frames])
            if self._frames
            else np.zeros(0, dtype=np.int16)
        )
        return Segment(samples, end_ms)

    def _remember(self, frame: _Frame) -> None:
        self._history.append(frame)
        while self._history and self._history[0].end_ms <= frame.end_ms - self._history_ms:
            self._history.popleft()
